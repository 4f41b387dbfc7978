// The fib, fj, nqueens, uts, sort, matmul and heat kernels on OpenMP tasks (GCC's libgomp), a peer
// that magpie is measured against side by side (see scripts/build-peers.sh and
// magpie_bench::native).
//
// Every run is one `parallel num_threads(threads)` region (dynamic adjustment off, so the team has
// exactly `threads` threads) whose `single` thread creates the tasks; libgomp keeps its threads
// between regions, and the untimed warm-up starts them.
//
//   fib      `task shared(a)` for fib(n-1), fib(n-2) computed by the creating thread, then
//            `taskwait` (one task per call, no cutoff, as magpie's fib::parallel).
//   fj       per repetition, a `taskgroup` in which 1024 tasks are created in a loop (as
//            fj::flat's scope).
//   nqueens  one `taskgroup` for the whole search (the scope): each placement on the first 5 rows
//            is a task, each task creating its own children; the rest of a board is searched
//            serially (as nqueens::parallel).
//   uts      one `taskgroup` for the whole tree (the scope): visiting a node counts it in its
//            thread's stripe and creates a task visiting each child (as uts::parallel).
//   sort, matmul, heat
//            the fork-join kernels of common.hpp with `join(a, b)` as a task for `b`, `a` run by
//            the creating thread, then `taskwait` (as `join` on magpie and rayon).

#include "common.hpp"

#include <omp.h>

#include <stdexcept>

namespace {

using peers::Board;
using peers::Counter;

uint64_t fib_omp(uint64_t n) {
    if (n < 2) {
        return n;
    }
    uint64_t a = 0;
#pragma omp task shared(a) firstprivate(n)
    a = fib_omp(n - 1);
    uint64_t b = fib_omp(n - 2);
#pragma omp taskwait
    return a + b;
}

void nq_visit(Board b, std::atomic<uint64_t> *total) {
    if (b.serial_below()) {
        total->fetch_add(peers::nq_count_serial(b), std::memory_order_relaxed);
        return;
    }
    for (uint32_t free = b.free_squares(); free != 0;) {
        uint32_t bit = peers::lowest_bit(free);
        free ^= bit;
        Board child = b.place(bit);
#pragma omp task firstprivate(child, total)
        nq_visit(child, total);
    }
}

// `join` on OpenMP: `b` becomes a task, `a` runs here, then `taskwait`.
struct OmpFork {
    template <class A, class B> void join(A &&a, B &&b) const {
        auto *bp = &b;
#pragma omp task firstprivate(bp)
        (*bp)();
        a();
#pragma omp taskwait
    }
};

void uts_visit(const peers::UtsParams *p, peers::UtsTally *tally, const peers::UtsNode &node) {
    uint32_t n = peers::uts_num_children(*p, node);
    tally->add(omp_get_thread_num(), node.height, n == 0);
    for (uint32_t i = 0; i < n; ++i) {
        peers::UtsNode child = node.child(i);
#pragma omp task firstprivate(p, tally, child)
        uts_visit(p, tally, child);
    }
}

struct OmpRuntime {
    int threads;

    explicit OmpRuntime(unsigned t) : threads(static_cast<int>(t)) {
        omp_set_dynamic(0);
        omp_set_num_threads(threads);
        int team = 0;
#pragma omp parallel num_threads(threads)
        {
#pragma omp single
            team = omp_get_num_threads();
        }
        if (team != threads) {
            throw std::runtime_error("asked OpenMP for " + std::to_string(threads) +
                                     " threads, got a team of " + std::to_string(team) +
                                     " (OMP_THREAD_LIMIT?)");
        }
    }

    uint64_t fib(uint64_t n) {
        uint64_t r = 0;
#pragma omp parallel num_threads(threads)
        {
#pragma omp single
            r = fib_omp(n);
        }
        return r;
    }

    void fj(uint64_t reps, Counter *counters) {
#pragma omp parallel num_threads(threads)
        {
#pragma omp single
            {
                for (uint64_t rep = 0; rep < reps; ++rep) {
#pragma omp taskgroup
                    {
                        for (std::size_t i = 0; i < peers::FJ_TASKS; ++i) {
                            Counter *c = &counters[i];
#pragma omp task firstprivate(c)
                            peers::fj_task(c);
                        }
                    }
                }
            }
        }
    }

    uint64_t nqueens(uint64_t n) {
        std::atomic<uint64_t> total{0};
        std::atomic<uint64_t> *tp = &total;
#pragma omp parallel num_threads(threads)
        {
#pragma omp single
            {
#pragma omp taskgroup
                nq_visit(Board::start(n), tp);
            }
        }
        return total.load(std::memory_order_relaxed);
    }

    peers::UtsCounts uts(const peers::UtsParams &p) {
        std::unique_ptr<peers::UtsTally> tally(new peers::UtsTally());
        const peers::UtsParams *pp = &p;
        peers::UtsTally *tp = tally.get();
#pragma omp parallel num_threads(threads)
        {
#pragma omp single
            {
                peers::UtsNode root = peers::UtsNode::root(*pp);
#pragma omp taskgroup
                uts_visit(pp, tp, root);
            }
        }
        return tally->total();
    }

    // The fork-join kernels: one parallel region, whose single thread runs the kernel.
    template <class Body> void fork_join(Body body) {
#pragma omp parallel num_threads(threads)
        {
#pragma omp single
            body(OmpFork{});
        }
    }

    void sort(uint64_t *v, std::size_t n) {
        fork_join([&](const OmpFork &f) { peers::sort_with(f, v, n); });
    }

    void matmul(std::size_t n, const double *a, const double *b, double *c) {
        fork_join([&](const OmpFork &f) { peers::matmul_with(f, n, a, b, c); });
    }

    void heat(std::size_t n, std::vector<double> &grid) {
        fork_join([&](const OmpFork &f) { peers::heat_with(f, n, grid); });
    }
};

} // namespace

int main(int argc, char **argv) { return peers::peer_main<OmpRuntime>(argc, argv); }
