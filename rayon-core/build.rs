// Cargo accepts a `links` key only from a package with a build script. This one has nothing to
// build: the key is there so that this crate and the real rayon-core cannot both be linked
// into one program.
fn main() {}
