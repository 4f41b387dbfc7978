# Sourced by the scripts that need nightly Rust: scripts/tsan.sh (ThreadSanitizer) and
# scripts/install-miri.sh with the Miri step of scripts/test.sh. They use this dated nightly,
# which rustup installs beside the user's own toolchains (about 20 s, once); the user's
# `nightly`, if any, is never updated. Move the date forward on purpose, in a commit of its own.
NIGHTLY=nightly-2026-10-30
