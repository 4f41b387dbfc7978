// The fib, fj, nqueens, uts, sort, matmul and heat kernels on Intel oneTBB's `tbb::task_group`, a
// peer that magpie is measured against side by side (see scripts/build-peers.sh and
// magpie_bench::native).
//
// The worker count is fixed twice over: `tbb::global_control(max_allowed_parallelism, threads)`
// caps TBB's global thread pool, and every kernel runs inside a `tbb::task_arena(threads)`, whose
// calling thread takes one slot (so `threads` threads in all, the caller included).
//
//   fib      a task_group per call: fib(n-1) is `run` as a task, fib(n-2) is computed by the
//            caller, then `wait` (one spawn per call, no cutoff, as magpie's fib::parallel).
//   fj       per repetition, one task_group into which 1024 tasks are `run` in a loop, then
//            `wait` (as fj::flat's scope).
//   nqueens  one task_group for the whole search (the scope): each placement on the first 5 rows
//            is `run` as a task into it, each task adding its own children; the rest of a board
//            is searched serially (as nqueens::parallel).
//   uts      one task_group for the whole tree (the scope): visiting a node counts it in its
//            thread's stripe and `run`s a visit of each child into the group (as uts::parallel).
//   sort, matmul, heat
//            the fork-join kernels of common.hpp with `join(a, b)` as a task_group into which `b`
//            is `run` while the caller runs `a`, then `wait` (as `join` on magpie and rayon).

#include "common.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

namespace {

using peers::Board;
using peers::Counter;

uint64_t fib_tbb(uint64_t n) {
    if (n < 2) {
        return n;
    }
    uint64_t a = 0;
    tbb::task_group g;
    g.run([&a, n] { a = fib_tbb(n - 1); });
    uint64_t b = fib_tbb(n - 2);
    g.wait();
    return a + b;
}

void nq_visit(tbb::task_group &g, Board b, std::atomic<uint64_t> *total) {
    if (b.serial_below()) {
        total->fetch_add(peers::nq_count_serial(b), std::memory_order_relaxed);
        return;
    }
    for (uint32_t free = b.free_squares(); free != 0;) {
        uint32_t bit = peers::lowest_bit(free);
        free ^= bit;
        Board child = b.place(bit);
        g.run([&g, child, total] { nq_visit(g, child, total); });
    }
}

// `join` on TBB: `b` is offered to the other threads, `a` runs here, then both are waited for.
struct TbbFork {
    template <class A, class B> void join(A &&a, B &&b) const {
        tbb::task_group g;
        g.run([&b] { b(); });
        a();
        g.wait();
    }
};

void uts_visit(tbb::task_group &g, const peers::UtsParams &p, peers::UtsTally &tally,
               const peers::UtsNode &node) {
    uint32_t n = peers::uts_num_children(p, node);
    tally.add(tbb::this_task_arena::current_thread_index(), node.height, n == 0);
    for (uint32_t i = 0; i < n; ++i) {
        peers::UtsNode child = node.child(i);
        g.run([&g, &p, &tally, child] { uts_visit(g, p, tally, child); });
    }
}

struct TbbRuntime {
    tbb::global_control limit;
    tbb::task_arena arena;

    explicit TbbRuntime(unsigned threads)
        : limit(tbb::global_control::max_allowed_parallelism, threads),
          arena(static_cast<int>(threads)) {
        arena.initialize();
    }

    uint64_t fib(uint64_t n) {
        uint64_t r = 0;
        arena.execute([&] { r = fib_tbb(n); });
        return r;
    }

    void fj(uint64_t reps, Counter *counters) {
        arena.execute([&] {
            for (uint64_t rep = 0; rep < reps; ++rep) {
                tbb::task_group g;
                for (std::size_t i = 0; i < peers::FJ_TASKS; ++i) {
                    Counter *c = &counters[i];
                    g.run([c] { peers::fj_task(c); });
                }
                g.wait();
            }
        });
    }

    uint64_t nqueens(uint64_t n) {
        std::atomic<uint64_t> total{0};
        arena.execute([&] {
            tbb::task_group g;
            nq_visit(g, Board::start(n), &total);
            g.wait();
        });
        return total.load(std::memory_order_relaxed);
    }

    peers::UtsCounts uts(const peers::UtsParams &p) {
        std::unique_ptr<peers::UtsTally> tally(new peers::UtsTally());
        arena.execute([&] {
            peers::UtsNode root = peers::UtsNode::root(p);
            tbb::task_group g;
            uts_visit(g, p, *tally, root);
            g.wait();
        });
        return tally->total();
    }

    void sort(uint64_t *v, std::size_t n) {
        arena.execute([&] { peers::sort_with(TbbFork{}, v, n); });
    }

    void matmul(std::size_t n, const double *a, const double *b, double *c) {
        arena.execute([&] { peers::matmul_with(TbbFork{}, n, a, b, c); });
    }

    void heat(std::size_t n, std::vector<double> &grid) {
        arena.execute([&] { peers::heat_with(TbbFork{}, n, grid); });
    }
};

} // namespace

int main(int argc, char **argv) { return peers::peer_main<TbbRuntime>(argc, argv); }
