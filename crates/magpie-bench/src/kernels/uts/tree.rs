//! The trees UTS searches: their parameters in the reference implementation's flag syntax
//! ([`Params`]), parsed and written back, the sample trees with their published sizes
//! ([`NAMED`]) and the T1 family the suite runs ([`t1_family`]). How a node's children follow
//! from these is the search's business (`Params::num_children`, in the kernel's module).

use std::fmt;
use std::str::FromStr;

/// The sample trees: name, parameters in the reference's flag syntax, and node count. The counts of
/// T1 … T3L are the ones published with the reference implementation; T1XS and T3XS are small
/// trees for tests, counted by [`serial`](super::serial) (whose generator reproduces the published counts).
pub const NAMED: &[(&str, &str, u64)] = &[
    ("T1", "-t 1 -a 3 -d 10 -b 4 -r 19", 4_130_071),
    ("T2", "-t 1 -a 2 -d 16 -b 6 -r 502", 4_117_769),
    ("T3", "-t 0 -b 2000 -q 0.124875 -m 8 -r 42", 4_112_897),
    (
        "T4",
        "-t 2 -a 0 -d 16 -b 6 -r 1 -q 0.234375 -m 4",
        4_132_453,
    ),
    ("T5", "-t 1 -a 0 -d 20 -b 4 -r 34", 4_147_582),
    ("T1L", "-t 1 -a 3 -d 13 -b 4 -r 29", 102_181_082),
    ("T3L", "-t 0 -b 2000 -q 0.200014 -m 5 -r 7", 111_345_631),
    ("T1XS", "-t 1 -a 3 -d 6 -b 4 -r 19", 16_000),
    ("T3XS", "-t 0 -b 20 -q 0.124875 -m 8 -r 42", 6_213),
];

/// The parameters of a [`NAMED`] tree (the name is matched without regard to case).
pub fn named(name: &str) -> Option<Params> {
    NAMED
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, args, _)| Params::parse(args).expect("the sample trees parse"))
}

/// The known node count of the tree `p` describes, if it is one of [`NAMED`] (compared by the
/// parameters that shape the tree, so a different `-g` or an unused flag does not matter).
pub fn expected_nodes(p: &Params) -> Option<u64> {
    let key = p.shape_key();
    NAMED
        .iter()
        .find(|(_, args, _)| Params::parse(args).is_ok_and(|q| q.shape_key() == key))
        .map(|&(_, _, n)| n)
}

/// Most children of any node but a binomial root (the reference's `MAXNUMCHILDREN`; balanced
/// trees are exempt).
pub const MAX_CHILDREN: u32 = 100;

/// The tree type, `-t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tree {
    /// `-t 0`: the root has `b` children; every other node has `m` with probability `q`, else 0.
    Binomial,
    /// `-t 1`: a geometric number of children with expected value given by the shape function.
    Geometric,
    /// `-t 2`: geometric above depth `f * d`, binomial from there down.
    Hybrid,
    /// `-t 3`: `b` children at every node above depth `d`.
    Balanced,
}

/// The shape function of geometric trees, `-a`: the expected branching factor `b_i` at depth `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `-a 0`: `b_i = b (1 - i/d)`.
    Linear,
    /// `-a 1`: `b_i = b i^(-ln b / ln d)`.
    ExpDec,
    /// `-a 2`: `b_i = b^sin(2 pi i / d)`, and 0 below depth `5 d`.
    Cyclic,
    /// `-a 3`: `b_i = b` above depth `d`, 0 from there.
    Fixed,
}

/// UTS parameters, in the reference's flag syntax (see [`Params::parse`]); the defaults are the
/// reference's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// `-t`: tree type (default geometric).
    pub tree: Tree,
    /// `-a`: shape function of geometric trees (default linear).
    pub shape: Shape,
    /// `-d`: depth parameter `d` of geometric, hybrid and balanced trees (default 6).
    pub depth: u32,
    /// `-b`: branching factor `b` (the root's, for binomial trees; default 4).
    pub b: f64,
    /// `-r`: root seed, 0 ≤ r < 2^31 (default 0).
    pub seed: u32,
    /// `-q`: probability that a binomial node has children (default 15/64). With `q * m` ≥ 1 a
    /// binomial tree may never end (T3L's is just above 1; for its seed the tree is finite).
    pub q: f64,
    /// `-m`: children of a binomial node that has any (default 4).
    pub m: u32,
    /// `-f`: fraction of `d` at which hybrid trees turn binomial (default 0.5).
    pub shift: f64,
    /// `-g`: compute granularity, hashes per child (the same hash, repeated; default 1). Changes
    /// the work per node, not the tree.
    pub granularity: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            tree: Tree::Geometric,
            shape: Shape::Linear,
            depth: 6,
            b: 4.0,
            seed: 0,
            q: 15.0 / 64.0,
            m: 4,
            shift: 0.5,
            granularity: 1,
        }
    }
}

const FLAGS: &str = "-t -a -d -b -r -q -m -f -g";

/// What a flag sets, or `None` for a flag UTS does not have.
fn describe(flag: char) -> Option<&'static str> {
    Some(match flag {
        't' => "tree type",
        'a' => "shape function",
        'd' => "depth",
        'b' => "branching factor",
        'r' => "root seed",
        'q' => "non-leaf probability",
        'm' => "children per non-leaf node",
        'f' => "shift depth fraction",
        'g' => "compute granularity",
        _ => return None,
    })
}

fn flag_name(flag: char) -> &'static str {
    describe(flag).unwrap_or("unknown")
}

fn int_in(flag: char, v: &str, lo: i64, hi: i64, what: &str) -> Result<i64, String> {
    match v.parse::<i64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!(
            "-{flag} ({}) must be {what}, got `{v}`",
            flag_name(flag)
        )),
    }
}

fn real_in(flag: char, v: &str, ok: impl Fn(f64) -> bool, what: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && ok(x) => Ok(x),
        _ => Err(format!(
            "-{flag} ({}) must be {what}, got `{v}`",
            flag_name(flag)
        )),
    }
}

impl Params {
    /// Parses parameters in the reference's syntax: whitespace-separated pairs of a flag and its
    /// value, e.g. `"-t 1 -a 3 -d 10 -b 4 -r 19"`. Flags: `-t` tree type (0 binomial, 1
    /// geometric, 2 hybrid, 3 balanced), `-a` shape (0 linear, 1 exponential decrease, 2 cyclic,
    /// 3 fixed), `-d` depth, `-b` branching factor, `-r` root seed, `-q` non-leaf probability,
    /// `-m` children per non-leaf node, `-f` hybrid shift depth fraction, `-g` compute
    /// granularity. Flags not given keep the reference's defaults; a flag may appear once.
    pub fn parse(args: &str) -> Result<Params, String> {
        let mut p = Params::default();
        let mut seen = String::new();
        let mut words = args.split_whitespace();
        while let Some(w) = words.next() {
            let mut cs = w.chars();
            let flag = match (cs.next(), cs.next(), cs.next()) {
                (Some('-'), Some(c), None) => c,
                _ => return Err(format!("expected a flag (one of {FLAGS}), got `{w}`")),
            };
            if describe(flag).is_none() {
                return Err(format!("unknown flag `{w}`; UTS flags are {FLAGS}"));
            }
            if seen.contains(flag) {
                return Err(format!("flag `{w}` ({}) given twice", flag_name(flag)));
            }
            seen.push(flag);
            let Some(v) = words.next() else {
                return Err(format!("flag `{w}` ({}) needs a value", flag_name(flag)));
            };
            const I32: i64 = i32::MAX as i64;
            match flag {
                't' => {
                    let what = "0 (binomial), 1 (geometric), 2 (hybrid) or 3 (balanced)";
                    p.tree = match int_in(flag, v, 0, 3, what)? {
                        0 => Tree::Binomial,
                        1 => Tree::Geometric,
                        2 => Tree::Hybrid,
                        _ => Tree::Balanced,
                    }
                }
                'a' => {
                    let what = "0 (linear), 1 (exponential decrease), 2 (cyclic) or 3 (fixed)";
                    p.shape = match int_in(flag, v, 0, 3, what)? {
                        0 => Shape::Linear,
                        1 => Shape::ExpDec,
                        2 => Shape::Cyclic,
                        _ => Shape::Fixed,
                    }
                }
                'd' => p.depth = int_in(flag, v, 0, I32, "a whole number ≥ 0")? as u32,
                'b' => {
                    p.b = real_in(
                        flag,
                        v,
                        |x| (0.0..=I32 as f64).contains(&x),
                        "a number in [0, 2^31)",
                    )?
                }
                'r' => p.seed = int_in(flag, v, 0, I32, "a whole number in 0 ..< 2^31")? as u32,
                'q' => {
                    p.q = real_in(
                        flag,
                        v,
                        |x| (0.0..=1.0).contains(&x),
                        "a probability in [0, 1]",
                    )?
                }
                'm' => p.m = int_in(flag, v, 0, I32, "a whole number ≥ 0")? as u32,
                'f' => p.shift = real_in(flag, v, |x| x >= 0.0, "a number ≥ 0")?,
                _ => p.granularity = int_in(flag, v, 1, I32, "a whole number ≥ 1")? as u32,
            }
        }
        Ok(p)
    }

    /// The flags that shape the tree (not `-g`), as the reference spells them.
    fn shape_key(&self) -> String {
        let mut s = self.to_string();
        if let Some(i) = s.find(" -g ") {
            s.truncate(i);
        }
        s
    }

}

impl FromStr for Params {
    type Err = String;
    fn from_str(s: &str) -> Result<Params, String> {
        Params::parse(s)
    }
}

/// The flags that matter for the tree type, in the reference's syntax (`-g` only when not 1);
/// parses back to the same tree.
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = match self.tree {
            Tree::Binomial => 0,
            Tree::Geometric => 1,
            Tree::Hybrid => 2,
            Tree::Balanced => 3,
        };
        write!(f, "-t {t}")?;
        if matches!(self.tree, Tree::Geometric | Tree::Hybrid) {
            let a = match self.shape {
                Shape::Linear => 0,
                Shape::ExpDec => 1,
                Shape::Cyclic => 2,
                Shape::Fixed => 3,
            };
            write!(f, " -a {a}")?;
        }
        if self.tree != Tree::Binomial {
            write!(f, " -d {}", self.depth)?;
        }
        write!(f, " -b {}", self.b)?;
        if matches!(self.tree, Tree::Binomial | Tree::Hybrid) {
            write!(f, " -q {} -m {}", self.q, self.m)?;
        }
        if self.tree == Tree::Hybrid {
            write!(f, " -f {}", self.shift)?;
        }
        write!(f, " -r {}", self.seed)?;
        if self.granularity != 1 {
            write!(f, " -g {}", self.granularity)?;
        }
        Ok(())
    }
}

/// The T1 family of geometric trees (`-t 1 -a 3 -b 4 -r 19 -d depth`) that `magpie bench uts
/// --n depth` runs: depth 10 is T1, depth 6 is T1XS.
pub fn t1_family(depth: u64) -> Params {
    format!("-t 1 -a 3 -d {depth} -b 4 -r 19")
        .parse()
        .expect("the T1 family's parameters parse")
}

