//! UTS: the generator against the reference's published trees, every parallel version against the
//! serial twin, and the parameter parser.

use magpie::{Policy, Pool};
use magpie_bench::kernels::uts::{self, Counts, Params};

fn tree(name: &str) -> Params {
    uts::named(name).unwrap_or_else(|| panic!("{name} is a named tree"))
}

/// The published size, depth and leaves of a sample tree, from the serial twin.
fn check_published(name: &str, nodes: u64, leaves: u64, max_depth: u32) {
    let p = tree(name);
    let got = uts::serial(&p);
    let want = Counts {
        nodes,
        leaves,
        max_depth,
    };
    assert_eq!(got, want, "{name} ({p})");
    assert_eq!(uts::verify(&p, &got, None), Ok(()), "{name}");
}

#[test]
fn serial_t1_matches_the_reference() {
    check_published("T1", 4_130_071, 3_305_118, 10);
}

#[test]
fn serial_t3_matches_the_reference() {
    check_published("T3", 4_112_897, 3_599_034, 1_572);
}

/// The cyclic, hybrid and linear shapes (about 10 s in a debug build, so not run by default:
/// `cargo test -p magpie-bench --test uts -- --ignored`).
#[test]
#[ignore]
fn serial_t2_t4_t5_match_the_reference() {
    check_published("T2", 4_117_769, 2_342_762, 81);
    check_published("T4", 4_132_453, 3_108_986, 134);
    check_published("T5", 4_147_582, 2_181_318, 20);
}

const SMALL: [&str; 2] = ["T1XS", "T3XS"];

#[test]
fn magpie_matches_serial_under_every_policy_and_width() {
    let twins: Vec<(Params, Counts)> = SMALL
        .iter()
        .map(|n| {
            let p = tree(n);
            (p, uts::serial(&p))
        })
        .collect();
    for policy in [Policy::WorkFirst, Policy::HelpFirst, Policy::Adaptive] {
        for w in [1, 2] {
            let pool = Pool::builder().workers(w).policy(policy).build().unwrap();
            for (p, want) in &twins {
                let got = pool.install(|| uts::parallel(p));
                assert_eq!(got, *want, "{policy}, {w} workers, {p}");
                assert_eq!(uts::verify(p, &got, None), Ok(()));
            }
        }
    }
}

#[test]
fn peers_match_serial() {
    for name in SMALL {
        let p = tree(name);
        let want = uts::serial(&p);
        for w in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| uts::rayon(&p)), want, "rayon, {w}, {name}");
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: std::num::NonZero::new(w),
                ..Default::default()
            });
            assert_eq!(
                uts::chili(&mut pool.scope(), &p),
                want,
                "chili, {w}, {name}"
            );
        }
    }
}

#[test]
fn small_trees_have_their_recorded_counts() {
    for name in SMALL {
        let p = tree(name);
        let got = uts::serial(&p);
        assert_eq!(uts::verify(&p, &got, None), Ok(()), "{name}");
        assert_eq!(uts::expected_nodes(&p), Some(got.nodes), "{name}");
    }
}

#[test]
fn named_knows_the_sample_trees() {
    for (name, nodes) in [
        ("T1", 4_130_071),
        ("T3", 4_112_897),
        ("T1L", 102_181_082),
        ("T3L", 111_345_631),
        ("T1XS", 16_000),
    ] {
        let p = tree(name);
        assert_eq!(uts::expected_nodes(&p), Some(nodes), "{name}");
        assert_eq!(uts::named(&name.to_lowercase()), Some(p));
    }
    let t1 = tree("T1");
    assert_eq!(t1.tree, uts::Tree::Geometric);
    assert_eq!(t1.shape, uts::Shape::Fixed);
    assert_eq!((t1.depth, t1.b, t1.seed), (10, 4.0, 19));
    let t3l = tree("T3L");
    assert_eq!(t3l.tree, uts::Tree::Binomial);
    assert_eq!((t3l.b, t3l.q, t3l.m, t3l.seed), (2000.0, 0.200014, 5, 7));
    assert_eq!(uts::named("T9"), None);
    assert_eq!(uts::named(""), None);
}

#[test]
fn parser_accepts_the_reference_syntax() {
    let p = Params::parse("  -t 2 -a 1\t-d 9 -b 3.5 -q 0.2 -m 3 -f 0.25 -r 7 -g 2 ").unwrap();
    assert_eq!(p.tree, uts::Tree::Hybrid);
    assert_eq!(p.shape, uts::Shape::ExpDec);
    assert_eq!((p.depth, p.b, p.q, p.m, p.shift), (9, 3.5, 0.2, 3, 0.25));
    assert_eq!((p.seed, p.granularity), (7, 2));
    assert_eq!(Params::parse(""), Ok(Params::default()));
    let d = Params::default();
    assert_eq!(
        (d.tree, d.shape, d.depth, d.b),
        (uts::Tree::Geometric, uts::Shape::Linear, 6, 4.0)
    );
    assert_eq!((d.q, d.m, d.shift, d.seed), (0.234375, 4, 0.5, 0));
    // Granularity repeats the hash; the tree is the same.
    let g = Params::parse("-t 1 -a 3 -d 6 -b 4 -r 19 -g 3").unwrap();
    assert_eq!(uts::serial(&g).nodes, 16_000);
}

#[test]
fn parser_rejects_bad_input_clearly() {
    let err = |args: &str| Params::parse(args).expect_err(args);
    let cases = [
        ("-z 3", "unknown flag `-z`"),
        ("-t", "`-t` (tree type) needs a value"),
        ("-b 4 -r", "`-r` (root seed) needs a value"),
        ("-t 4", "-t (tree type) must be 0 (binomial)"),
        ("-t x", "got `x`"),
        ("-a 7", "-a (shape function) must be"),
        ("-d -1", "-d (depth) must be a whole number ≥ 0, got `-1`"),
        ("-d 2.5", "got `2.5`"),
        (
            "-b abc",
            "-b (branching factor) must be a number in [0, 2^31), got `abc`",
        ),
        ("-b -2", "got `-2`"),
        ("-b inf", "got `inf`"),
        ("-b NaN", "got `NaN`"),
        (
            "-q 1.5",
            "-q (non-leaf probability) must be a probability in [0, 1]",
        ),
        ("-m -1", "-m (children per non-leaf node) must be"),
        (
            "-r 2147483648",
            "-r (root seed) must be a whole number in 0 ..< 2^31",
        ),
        ("-r -1", "got `-1`"),
        ("-f -0.5", "-f (shift depth fraction) must be"),
        (
            "-g 0",
            "-g (compute granularity) must be a whole number ≥ 1",
        ),
        ("-b 4 -b 5", "flag `-b` (branching factor) given twice"),
        ("t 1", "expected a flag"),
        ("-tt 1", "expected a flag"),
        ("-t 1 4", "got `4`"),
    ];
    for (args, want) in cases {
        let e = err(args);
        assert!(e.contains(want), "`{args}`: {e:?} should contain {want:?}");
    }
    assert!("-t 9".parse::<Params>().is_err());
}
