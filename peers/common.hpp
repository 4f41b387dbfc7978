// Shared by the C++ peer programs (tbb_kernels.cpp, omp_kernels.cpp): the command line, the
// kernels' sizes, serial parts and verifiers (mirroring crates/magpie-bench/src/{fib,fj,nqueens}.rs),
// and the timing loop.
//
// Command line: <binary> <kernel> <n> <threads> <runs>
//   kernel   fib | fj | nqueens
//   n        fib: fib(n), n <= 60; fj: repetitions of 1024 tasks, n <= 1e8; nqueens: side, n <= 16
//   threads  workers, 1..=1024
//   runs     timed runs, 1..=1000000
// Output: one line per run, `time_s=<seconds> verified=<1|0>`; a failed check is also explained
// on stderr. Exit status: 0 if every run verified, 1 if one did not (or the runtime failed),
// 2 for bad arguments.
//
// Each run's input (the FJ counters) is made before the clock starts and checked after it stops,
// as magpie's harness does; the runtime's threads are started by an untimed warm-up before the
// first run, as a magpie pool's are when it is built.

#ifndef MAGPIE_PEERS_COMMON_HPP
#define MAGPIE_PEERS_COMMON_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

namespace peers {

// ---- fib -----------------------------------------------------------------------------------

// Largest n accepted (as fib::MAX_N).
constexpr uint64_t FIB_MAX_N = 60;

// fib(n) by iteration: the known answer.
inline uint64_t fib_expected(uint64_t n) {
    uint64_t a = 0, b = 1;
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t next = a + b;
        a = b;
        b = next;
    }
    return a;
}

// ---- fj ------------------------------------------------------------------------------------

// Tasks per repetition (as fj::TASKS).
constexpr std::size_t FJ_TASKS = 1024;
// Largest repetition count accepted (the counters are 32-bit; as fj::MAX_REPS).
constexpr uint64_t FJ_MAX_REPS = 100000000;

using Counter = std::atomic<uint32_t>;

// The body of every FJ task: a relaxed increment of its own counter.
inline void fj_task(Counter *c) { c->fetch_add(1, std::memory_order_relaxed); }

// ---- nqueens -------------------------------------------------------------------------------

// Largest side with a known answer.
constexpr uint64_t NQ_MAX_N = 16;
// Queens on the first this-many rows are placed by tasks (as nqueens::PAR_ROWS).
constexpr uint32_t NQ_PAR_ROWS = 5;
// Solutions for n = 0..=16 (OEIS A000170); n = 0 counts the empty board.
constexpr uint64_t NQ_KNOWN[17] = {1,     1,      0,      0,       2,       10,
                                   4,     40,     92,     352,     724,     2680,
                                   14200, 73712,  365596, 2279184, 14772512};

// A partial placement: the squares of the next row attacked by columns and both diagonals.
struct Board {
    uint32_t cols, left, right;
    uint32_t rows_left; // rows still to place
    uint32_t row;       // rows already placed
    uint32_t full;      // the n low bits

    static Board start(uint64_t n) {
        return Board{0, 0, 0, static_cast<uint32_t>(n), 0,
                     static_cast<uint32_t>((uint64_t{1} << n) - 1)};
    }
    // Free squares of the next row.
    uint32_t free_squares() const { return ~(cols | left | right) & full; }
    // Whether the rest of this board is searched serially (the cutoff).
    bool serial_below() const { return row >= NQ_PAR_ROWS || rows_left == 0; }
    // The board after a queen on square `bit` of the next row.
    Board place(uint32_t bit) const {
        return Board{cols | bit,   (left | bit) << 1, (right | bit) >> 1,
                     rows_left - 1, row + 1,           full};
    }
};

// The lowest set bit of a nonzero mask.
inline uint32_t lowest_bit(uint32_t m) { return m & (0u - m); }

// Counts the completions of `b` without tasks.
inline uint64_t nq_count_serial(Board b) {
    if (b.rows_left == 0) {
        return 1;
    }
    uint64_t total = 0;
    for (uint32_t free = b.free_squares(); free != 0;) {
        uint32_t bit = lowest_bit(free);
        free ^= bit;
        total += nq_count_serial(b.place(bit));
    }
    return total;
}

// ---- command line and timing ---------------------------------------------------------------

enum class Kernel { Fib, Fj, NQueens };

struct Args {
    Kernel kernel;
    uint64_t n;
    unsigned threads;
    uint64_t runs;
};

constexpr unsigned MAX_THREADS = 1024;
constexpr uint64_t MAX_RUNS = 1000000;

[[noreturn]] inline void usage_error(const char *prog, const std::string &why) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s <fib|fj|nqueens> <n> <threads> <runs>\n"
                 "  fib: n <= %llu; fj: n repetitions of %zu tasks, n <= %llu; nqueens: side n <= "
                 "%llu\n  threads: 1..=%u; runs: 1..=%llu\n",
                 prog, why.c_str(), prog, static_cast<unsigned long long>(FIB_MAX_N), FJ_TASKS,
                 static_cast<unsigned long long>(FJ_MAX_REPS),
                 static_cast<unsigned long long>(NQ_MAX_N), MAX_THREADS,
                 static_cast<unsigned long long>(MAX_RUNS));
    std::exit(2);
}

// A decimal integer made of digits only (no sign, no spaces), at most `max`.
inline bool parse_u64(const char *s, uint64_t max, uint64_t &out) {
    if (*s == '\0') {
        return false;
    }
    uint64_t v = 0;
    for (const char *p = s; *p != '\0'; ++p) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        uint64_t d = static_cast<uint64_t>(*p - '0');
        if (v > (max - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    out = v;
    return true;
}

inline Args parse_args(int argc, char **argv) {
    const char *prog = argc > 0 ? argv[0] : "kernels";
    if (argc != 5) {
        usage_error(prog, "expected 4 arguments, got " + std::to_string(argc > 0 ? argc - 1 : 0));
    }
    Args a{};
    uint64_t max_n = 0;
    if (std::strcmp(argv[1], "fib") == 0) {
        a.kernel = Kernel::Fib;
        max_n = FIB_MAX_N;
    } else if (std::strcmp(argv[1], "fj") == 0) {
        a.kernel = Kernel::Fj;
        max_n = FJ_MAX_REPS;
    } else if (std::strcmp(argv[1], "nqueens") == 0) {
        a.kernel = Kernel::NQueens;
        max_n = NQ_MAX_N;
    } else {
        usage_error(prog, std::string("unknown kernel '") + argv[1] + "'");
    }
    if (!parse_u64(argv[2], max_n, a.n)) {
        usage_error(prog, std::string("bad n '") + argv[2] + "' for " + argv[1] +
                              " (a whole number <= " + std::to_string(max_n) + ")");
    }
    uint64_t threads = 0;
    if (!parse_u64(argv[3], MAX_THREADS, threads) || threads == 0) {
        usage_error(prog, std::string("bad thread count '") + argv[3] + "'");
    }
    a.threads = static_cast<unsigned>(threads);
    if (!parse_u64(argv[4], MAX_RUNS, a.runs) || a.runs == 0) {
        usage_error(prog, std::string("bad run count '") + argv[4] + "'");
    }
    return a;
}

// Runs the kernel `args.runs` times on `rt`, printing one line per run; returns the exit status.
// `Runtime` provides: `uint64_t fib(uint64_t n)`, `void fj(uint64_t reps, Counter *counters)`
// (FJ_TASKS counters) and `uint64_t nqueens(uint64_t n)`.
template <class Runtime> int run_all(Runtime &rt, const Args &args) {
    using clock = std::chrono::steady_clock;
    bool all_ok = true;
    for (uint64_t run = 1; run <= args.runs; ++run) {
        std::string failure;
        double secs = 0;
        switch (args.kernel) {
        case Kernel::Fib: {
            auto t0 = clock::now();
            uint64_t got = rt.fib(args.n);
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            uint64_t want = fib_expected(args.n);
            if (got != want) {
                failure = "fib(" + std::to_string(args.n) + ") = " + std::to_string(got) +
                          ", expected " + std::to_string(want);
            }
            break;
        }
        case Kernel::Fj: {
            std::unique_ptr<Counter[]> counters(new Counter[FJ_TASKS]);
            for (std::size_t i = 0; i < FJ_TASKS; ++i) {
                counters[i].store(0, std::memory_order_relaxed);
            }
            auto t0 = clock::now();
            rt.fj(args.n, counters.get());
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            for (std::size_t i = 0; i < FJ_TASKS; ++i) {
                uint32_t c = counters[i].load(std::memory_order_relaxed);
                if (c != args.n) {
                    failure = "task " + std::to_string(i) + " ran " + std::to_string(c) +
                              " times in " + std::to_string(args.n) + " repetitions";
                    break;
                }
            }
            break;
        }
        case Kernel::NQueens: {
            auto t0 = clock::now();
            uint64_t got = rt.nqueens(args.n);
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            uint64_t want = NQ_KNOWN[args.n];
            if (got != want) {
                failure = "nqueens(" + std::to_string(args.n) + ") = " + std::to_string(got) +
                          ", expected " + std::to_string(want);
            }
            break;
        }
        }
        bool ok = failure.empty();
        if (!ok) {
            all_ok = false;
            std::fprintf(stderr, "run %llu: %s\n", static_cast<unsigned long long>(run),
                         failure.c_str());
        }
        std::printf("time_s=%.9f verified=%d\n", secs, ok ? 1 : 0);
        std::fflush(stdout);
    }
    return all_ok ? 0 : 1;
}

// main() of a peer program: parses the arguments, builds `Runtime(threads)`, warms it up with a
// small untimed fib, and runs the kernel. A C++ exception from the runtime exits with status 1.
template <class Runtime> int peer_main(int argc, char **argv) {
    Args args = parse_args(argc, argv);
    try {
        Runtime rt(args.threads);
        if (rt.fib(16) != fib_expected(16)) {
            std::fprintf(stderr, "%s: warm-up fib(16) gave a wrong answer\n", argv[0]);
            return 1;
        }
        return run_all(rt, args);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: runtime error: %s\n", argv[0], e.what());
        return 1;
    }
}

} // namespace peers

#endif
