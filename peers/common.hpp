// Shared by the C++ peer programs (tbb_kernels.cpp, omp_kernels.cpp): the command line, the
// kernels' inputs, serial parts and verifiers (mirroring crates/magpie-bench/src/{fib,fj,nqueens,
// uts,sort,matmul,heat}.rs), the fork-join kernels written once over a `Fork` (as the Rust ones
// are over `magpie_bench::fork::Fork`), and the timing loop.
//
// Command line: <binary> <kernel> <n> <threads> <runs>
//   kernel   fib | fj | nqueens | uts | sort | matmul | heat
//   n        fib: fib(n), n <= 60; fj: repetitions of 1024 tasks, n <= 1e8; nqueens: side,
//            n <= 16; uts: depth of the T1 family (-t 1 -a 3 -b 4 -r 19 -d n), 1 <= n <= 14;
//            sort: keys, 1 <= n <= 1e9; matmul: side, a power of two <= 8192; heat: grid side,
//            3 <= n <= 16384
//   threads  workers, 1..=1024
//   runs     timed runs, 1..=1000000
// Output: one line per run, `time_s=<seconds> verified=<1|0>`; a failed check is also explained
// on stderr. Exit status: 0 if every run verified, 1 if one did not (or the runtime failed),
// 2 for bad arguments.
//
// Environment: MAGPIE_PEERS_REPORT=1 also prints, on stderr, one `report ...` line per run with
// what the run computed (uts: the three counts; sort, matmul, heat: an FNV-1a hash of the result's
// 64-bit words), so that tests can compare it with the Rust kernels; MAGPIE_PEERS_SHA1=portable
// makes UTS use the portable SHA-1 even where the CPU has the SHA extensions.
//
// Each run's input (the FJ counters, the keys, the matrices, the grid) is made before the clock
// starts and checked after it stops, as magpie's harness does; what a check compares against (the
// serial UTS counts, the sorted keys, the serial heat grid) is computed once per process, before
// the first run. The runtime's threads are started by an untimed warm-up before the first run, as
// a magpie pool's are when it is built.

#ifndef MAGPIE_PEERS_COMMON_HPP
#define MAGPIE_PEERS_COMMON_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define PEERS_HAVE_SHANI 1
#else
#define PEERS_HAVE_SHANI 0
#endif

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

// ---- fork-join -----------------------------------------------------------------------------

// The serial `Fork`: `a`, then `b` (the serial twins of the join-based kernels, as
// magpie_bench::fork::Serial). A runtime's `Fork` runs `a` on the calling thread and offers `b`
// to the other workers, as `join` does on magpie and rayon.
struct SerialFork {
    template <class A, class B> void join(A &&a, B &&b) const {
        a();
        b();
    }
};

// The splitmix64 step used by every generator below (as the Rust kernels' `Rng` and sort's
// `keys`).
inline uint64_t splitmix64(uint64_t &state) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// FNV-1a over 64-bit words (the report's digest of a result; the Rust tests compute the same).
inline uint64_t fnv1a_words(const uint64_t *w, std::size_t len) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (std::size_t i = 0; i < len; ++i) {
        h ^= w[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

inline uint64_t fnv1a_doubles(const double *x, std::size_t len) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (std::size_t i = 0; i < len; ++i) {
        uint64_t bits;
        std::memcpy(&bits, &x[i], sizeof bits);
        h ^= bits;
        h *= 0x100000001B3ull;
    }
    return h;
}

// ---- SHA-1 (FIPS 180-4) --------------------------------------------------------------------
//
// UTS hashes one short message per node, so only one-block messages are needed: the message is
// padded into a single 64-byte block (FIPS 180-4, 5.1.1) and the compression function (6.1.2)
// runs once from the initial hash value (5.3.1). Blocks are handled as their sixteen big-endian
// 32-bit words, and UTS's messages are whole words (a node's state is the five digest words), so
// no byte shuffling is needed on the hot path. The compression function comes in two versions:
// the portable one, and one on the x86 SHA extensions (SHA1RNDS4 and friends), used where the
// CPU has them, as the Rust sha1 crate that magpie's UTS uses does; every process checks the
// active one against the FIPS examples and, for the extensions, against the portable one.

namespace sha1 {

constexpr uint32_t IV[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};

inline uint32_t rotl(uint32_t x, unsigned s) { return (x << s) | (x >> (32 - s)); }

inline uint32_t load_be32(const uint8_t *p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

inline void store_be32(uint8_t *p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

// The compression function, FIPS 180-4 6.1.2 steps 1-4, in plain C++: `h` is updated by the
// block whose words are `block` (W[0..16), as big-endian integers).
inline void compress_portable(uint32_t h[5], const uint32_t block[16]) {
    uint32_t w[80];
    for (int t = 0; t < 16; ++t) {
        w[t] = block[t];
    }
    for (int t = 16; t < 80; ++t) {
        w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    // One round: T = rotl(a, 5) + f(b, c, d) + e + K + W[t], then the registers shift.
    auto round = [&](uint32_t f, uint32_t k, uint32_t wt) {
        uint32_t temp = rotl(a, 5) + f + e + k + wt;
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = temp;
    };
    for (int t = 0; t < 20; ++t) {
        round((b & c) ^ (~b & d), 0x5A827999u, w[t]); // Ch
    }
    for (int t = 20; t < 40; ++t) {
        round(b ^ c ^ d, 0x6ED9EBA1u, w[t]); // Parity
    }
    for (int t = 40; t < 60; ++t) {
        round((b & c) ^ (b & d) ^ (c & d), 0x8F1BBCDCu, w[t]); // Maj
    }
    for (int t = 60; t < 80; ++t) {
        round(b ^ c ^ d, 0xCA62C1D6u, w[t]); // Parity
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

#if PEERS_HAVE_SHANI
// Whether the CPU has the SHA extensions and SSE4.1 (for the lane extraction).
inline bool cpu_has_shani() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        return false;
    }
    bool sse41 = (c >> 19) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        return false;
    }
    bool sha = (b >> 29) & 1;
    return sse41 && sha;
}

// Four rounds (group G of 20). The message words of group G, W[4G..4G+4), are `m[G]` for G < 4,
// else computed from the four previous groups' (FIPS 180-4 6.1.2 step 1) by SHA1MSG1, a xor and
// SHA1MSG2; `m[G % 4]` holds group G - 4's words on entry and group G's on exit. E for the group is
// E plus W[0] for the first group, else rotl(A at the start of the previous group, 30) plus W[4G]
// (SHA1NEXTE). SHA1RNDS4 then does the four rounds with the function and constant of rounds
// 20 (G / 5) .. 20 (G / 5) + 19.
#define PEERS_SHA1_GROUP(G)                                                                       \
    do {                                                                                          \
        __m128i msg_;                                                                             \
        if ((G) < 4) {                                                                            \
            msg_ = m[(G) % 4];                                                                    \
        } else {                                                                                  \
            msg_ = _mm_sha1msg2_epu32(                                                            \
                _mm_xor_si128(_mm_sha1msg1_epu32(m[(G) % 4], m[((G) + 1) % 4]),                 \
                              m[((G) + 2) % 4]),                                                  \
                m[((G) + 3) % 4]);                                                                \
            m[(G) % 4] = msg_;                                                                    \
        }                                                                                         \
        __m128i e_in_ = (G) == 0 ? _mm_add_epi32(e, msg_) : _mm_sha1nexte_epu32(prev, msg_);     \
        prev = abcd;                                                                              \
        abcd = _mm_sha1rnds4_epu32(abcd, e_in_, (G) / 5);                                         \
    } while (0)

// The compression function on the SHA extensions. The block's words come as four registers,
// W[4i] in the top lane of m[i]; A, B, C, D live in one register (A in the top lane), E in the top
// lane of another.
__attribute__((target("sha,sse4.1"))) inline void compress_shani(uint32_t h[5], __m128i m[4]) {
    const __m128i abcd0 =
        _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h)), 0x1B);
    const __m128i e0 = _mm_set_epi32(static_cast<int>(h[4]), 0, 0, 0);
    __m128i abcd = abcd0, e = e0, prev = abcd0;
    PEERS_SHA1_GROUP(0);
    PEERS_SHA1_GROUP(1);
    PEERS_SHA1_GROUP(2);
    PEERS_SHA1_GROUP(3);
    PEERS_SHA1_GROUP(4);
    PEERS_SHA1_GROUP(5);
    PEERS_SHA1_GROUP(6);
    PEERS_SHA1_GROUP(7);
    PEERS_SHA1_GROUP(8);
    PEERS_SHA1_GROUP(9);
    PEERS_SHA1_GROUP(10);
    PEERS_SHA1_GROUP(11);
    PEERS_SHA1_GROUP(12);
    PEERS_SHA1_GROUP(13);
    PEERS_SHA1_GROUP(14);
    PEERS_SHA1_GROUP(15);
    PEERS_SHA1_GROUP(16);
    PEERS_SHA1_GROUP(17);
    PEERS_SHA1_GROUP(18);
    PEERS_SHA1_GROUP(19);
    // The new E is the old one plus the final E, rotl(A at the start of group 19, 30).
    e = _mm_sha1nexte_epu32(prev, e0);
    abcd = _mm_add_epi32(abcd, abcd0);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(h), _mm_shuffle_epi32(abcd, 0x1B));
    h[4] = static_cast<uint32_t>(_mm_extract_epi32(e, 3));
}
#undef PEERS_SHA1_GROUP

// compress_shani on a block given as words in memory.
__attribute__((target("sha,sse4.1"))) inline void compress_shani_words(uint32_t h[5],
                                                                      const uint32_t block[16]) {
    __m128i m[4];
    for (int i = 0; i < 4; ++i) {
        // Lanes 0..3 hold W[4i..4i+4); reversed, W[4i] is in the top lane.
        __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 4 * i));
        m[i] = _mm_shuffle_epi32(w, 0x1B);
    }
    compress_shani(h, m);
}

// The digest of the 24-byte message made of the five words `state` and `i` (a UTS child), on
// the SHA extensions, the block built in registers.
__attribute__((target("sha,sse4.1"))) inline void state_and_index_shani(const uint32_t state[5],
                                                                       uint32_t i,
                                                                       uint32_t out[5]) {
    __m128i m[4];
    m[0] = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(state)), 0x1B);
    m[1] = _mm_set_epi32(static_cast<int>(state[4]), static_cast<int>(i),
                         static_cast<int>(0x80000000u), 0);
    m[2] = _mm_setzero_si128();
    m[3] = _mm_set_epi32(0, 0, 0, 24 * 8);
    for (int k = 0; k < 5; ++k) {
        out[k] = IV[k];
    }
    compress_shani(out, m);
}
#endif

// Whether the SHA extensions are used; set by `select` before any hashing.
inline bool use_shani = false;

inline void compress(uint32_t h[5], const uint32_t block[16]) {
#if PEERS_HAVE_SHANI
    if (use_shani) {
        compress_shani_words(h, block);
        return;
    }
#endif
    compress_portable(h, block);
}

// The digest (five words) of a message of `n` <= 13 big-endian words, `msg`.
inline void words(const uint32_t *msg, std::size_t n, uint32_t out[5]) {
    uint32_t block[16] = {};
    for (std::size_t k = 0; k < n; ++k) {
        block[k] = msg[k];
    }
    block[n] = 0x80000000u; // the 1 bit after the message
    block[15] = static_cast<uint32_t>(n * 32); // the length in bits
    for (int k = 0; k < 5; ++k) {
        out[k] = IV[k];
    }
    compress(out, block);
}

// The digest of the message `state` (five words) followed by `i`: a UTS child's state.
inline void state_and_index(const uint32_t state[5], uint32_t i, uint32_t out[5]) {
#if PEERS_HAVE_SHANI
    if (use_shani) {
        state_and_index_shani(state, i, out);
        return;
    }
#endif
    uint32_t msg[6] = {state[0], state[1], state[2], state[3], state[4], i};
    words(msg, 6, out);
}

// SHA-1 of a byte message of at most 55 bytes, as 20 bytes (for the self-test).
inline void bytes(const uint8_t *msg, std::size_t len, uint8_t out[20]) {
    uint8_t padded[64] = {};
    if (len > 0) {
        std::memcpy(padded, msg, len);
    }
    padded[len] = 0x80;
    uint64_t bits = static_cast<uint64_t>(len) * 8;
    for (int k = 0; k < 8; ++k) {
        padded[63 - k] = static_cast<uint8_t>(bits >> (8 * k));
    }
    uint32_t block[16];
    for (int k = 0; k < 16; ++k) {
        block[k] = load_be32(padded + 4 * k);
    }
    uint32_t h[5] = {IV[0], IV[1], IV[2], IV[3], IV[4]};
    compress(h, block);
    for (int k = 0; k < 5; ++k) {
        store_be32(out + 4 * k, h[k]);
    }
}

// Checks the active SHA-1 against the FIPS 180-4 examples ("abc", and the empty message) and,
// when it is the SHA-extension one, against the portable one: on messages of every length
// 0..=55 bytes, and on UTS child messages. Returns what went wrong, or "" if nothing did.
inline std::string self_test() {
    static const uint8_t abc_digest[20] = {0xA9, 0x99, 0x3E, 0x36, 0x47, 0x06, 0x81,
                                           0x6A, 0xBA, 0x3E, 0x25, 0x71, 0x78, 0x50,
                                           0xC2, 0x6C, 0x9C, 0xD0, 0xD8, 0x9D};
    static const uint8_t empty_digest[20] = {0xDA, 0x39, 0xA3, 0xEE, 0x5E, 0x6B, 0x4B,
                                             0x0D, 0x32, 0x55, 0xBF, 0xEF, 0x95, 0x60,
                                             0x18, 0x90, 0xAF, 0xD8, 0x07, 0x09};
    uint8_t out[20];
    bytes(reinterpret_cast<const uint8_t *>("abc"), 3, out);
    if (std::memcmp(out, abc_digest, 20) != 0) {
        return "SHA-1(\"abc\") is wrong";
    }
    bytes(nullptr, 0, out);
    if (std::memcmp(out, empty_digest, 20) != 0) {
        return "SHA-1(\"\") is wrong";
    }
#if PEERS_HAVE_SHANI
    if (use_shani) {
        for (std::size_t len = 0; len <= 55; ++len) {
            uint8_t padded[64] = {};
            for (std::size_t k = 0; k < len; ++k) {
                padded[k] = static_cast<uint8_t>(k * 37 + len);
            }
            padded[len] = 0x80;
            padded[63] = static_cast<uint8_t>(len * 8);
            padded[62] = static_cast<uint8_t>((len * 8) >> 8);
            uint32_t block[16];
            for (int k = 0; k < 16; ++k) {
                block[k] = load_be32(padded + 4 * k);
            }
            uint32_t a[5] = {IV[0], IV[1], IV[2], IV[3], IV[4]};
            uint32_t b[5] = {IV[0], IV[1], IV[2], IV[3], IV[4]};
            compress_shani_words(a, block);
            compress_portable(b, block);
            if (std::memcmp(a, b, sizeof a) != 0) {
                return "the SHA-extension SHA-1 differs from the portable one at length " +
                       std::to_string(len);
            }
        }
        uint32_t state[5] = {IV[0], IV[1], IV[2], IV[3], IV[4]};
        for (uint32_t i = 0; i < 64; ++i) {
            uint32_t fast[5], slow[5];
            uint32_t msg[6] = {state[0], state[1], state[2], state[3], state[4], i * 0x9E3779B9u};
            state_and_index_shani(state, msg[5], fast);
            uint32_t block[16] = {msg[0], msg[1], msg[2], msg[3], msg[4], msg[5], 0x80000000u};
            block[15] = 6 * 32;
            for (int k = 0; k < 5; ++k) {
                slow[k] = IV[k];
            }
            compress_portable(slow, block);
            if (std::memcmp(fast, slow, sizeof fast) != 0) {
                return "the SHA-extension SHA-1 of a UTS child differs from the portable one";
            }
            std::memcpy(state, fast, sizeof state);
        }
    }
#endif
    return "";
}

// Chooses the compression function (the SHA extensions where the CPU has them, unless
// MAGPIE_PEERS_SHA1=portable) and self-tests it; returns the self-test's failure or "".
inline std::string select() {
    const char *want = std::getenv("MAGPIE_PEERS_SHA1");
    bool portable = want != nullptr && std::strcmp(want, "portable") == 0;
#if PEERS_HAVE_SHANI
    use_shani = !portable && cpu_has_shani();
#else
    (void)portable;
    use_shani = false;
#endif
    return self_test();
}

inline const char *active() { return use_shani ? "sha-extensions" : "portable"; }

} // namespace sha1
// ---- uts -----------------------------------------------------------------------------------
//
// The T1 family of geometric trees with the fixed shape function, `-t 1 -a 3 -b 4 -r 19 -d n`
// (uts::t1_family): a node above depth d has a geometric number of children with mean b = 4 (at
// most 100), a node at depth d none. Each node is a 20-byte SHA-1 state (kept as the digest's
// five words, whose big-endian bytes the state is); the root's is the hash of 16 zero bytes and
// the big-endian seed, child i's the hash of its parent's state and the big-endian i; a node's
// draw is its state's last four bytes, big-endian, less the top bit. As uts.rs, so the counts
// are the Rust serial twin's to the node.

// Deepest tree accepted (as the Rust kernel's max_n).
constexpr uint64_t UTS_MAX_DEPTH = 14;
// Most children of a node (the reference's MAXNUMCHILDREN).
constexpr uint32_t UTS_MAX_CHILDREN = 100;
// T1 (depth 10): its published node count, and its leaves and depth (the Rust serial twin's).
constexpr uint64_t UTS_T1_DEPTH = 10;
constexpr uint64_t UTS_T1_NODES = 4130071;
constexpr uint64_t UTS_T1_LEAVES = 3305118;

struct UtsParams {
    uint32_t depth; // -d
    double b;       // -b
    uint32_t seed;  // -r

    static UtsParams t1_family(uint64_t depth) {
        return UtsParams{static_cast<uint32_t>(depth), 4.0, 19};
    }
};

struct UtsNode {
    uint32_t state[5]; // the SHA-1 digest words: the 20-byte state, big-endian
    uint32_t height;

    static UtsNode root(const UtsParams &p) {
        const uint32_t msg[5] = {0, 0, 0, 0, p.seed};
        UtsNode r{};
        sha1::words(msg, 5, r.state);
        r.height = 0;
        return r;
    }

    UtsNode child(uint32_t i) const {
        UtsNode c;
        sha1::state_and_index(state, i, c.state);
        c.height = height + 1;
        return c;
    }

    // The state's last four bytes, big-endian, less the top bit.
    uint32_t rand() const { return state[4] & 0x7FFFFFFFu; }
};

// Children of `node`: a geometric variable with mean b_i (b above depth d, else 0), drawn by
// inverting its distribution function at the node's uniform draw, with uts.rs's operations in
// uts.rs's order (glibc's log, as Rust's f64::ln here).
inline uint32_t uts_num_children(const UtsParams &p, const UtsNode &node) {
    double b_i = node.height == 0 ? p.b : (node.height < p.depth ? p.b : 0.0);
    double prob = 1.0 / (1.0 + b_i);
    double u = static_cast<double>(node.rand()) / 2147483648.0;
    double n = std::floor(std::log(1.0 - u) / std::log(1.0 - prob));
    if (std::isnan(n) || n <= 0.0) {
        return 0;
    }
    return static_cast<uint32_t>(std::min(n, static_cast<double>(UTS_MAX_CHILDREN)));
}

// What a search counts (as uts::Counts).
struct UtsCounts {
    uint64_t nodes = 0;
    uint64_t leaves = 0;
    uint32_t max_depth = 0;

    bool operator==(const UtsCounts &o) const {
        return nodes == o.nodes && leaves == o.leaves && max_depth == o.max_depth;
    }
    std::string to_string() const {
        return "nodes=" + std::to_string(nodes) + " leaves=" + std::to_string(leaves) +
               " max_depth=" + std::to_string(max_depth);
    }
};

// The serial count: depth-first search with an explicit stack (as uts::serial).
inline UtsCounts uts_serial(const UtsParams &p) {
    UtsCounts c;
    std::vector<UtsNode> stack{UtsNode::root(p)};
    while (!stack.empty()) {
        UtsNode node = stack.back();
        stack.pop_back();
        uint32_t n = uts_num_children(p, node);
        c.nodes += 1;
        c.leaves += n == 0 ? 1 : 0;
        c.max_depth = std::max(c.max_depth, node.height);
        for (uint32_t i = 0; i < n; ++i) {
            stack.push_back(node.child(i));
        }
    }
    return c;
}

// Per-thread counters for the task-based searches, a cache-line pair each (as uts.rs's Tally):
// a task adds its node to its thread's stripe; the sum is exact.
class UtsTally {
  public:
    static constexpr std::size_t STRIPES = 64;

    void add(int thread, uint32_t height, bool leaf) {
        Stripe &s = stripes_[static_cast<std::size_t>(thread < 0 ? 0 : thread) % STRIPES];
        s.nodes.fetch_add(1, std::memory_order_relaxed);
        if (leaf) {
            s.leaves.fetch_add(1, std::memory_order_relaxed);
        }
        uint32_t seen = s.max_depth.load(std::memory_order_relaxed);
        while (height > seen &&
               !s.max_depth.compare_exchange_weak(seen, height, std::memory_order_relaxed)) {
        }
    }

    // The totals; call once the search has finished.
    UtsCounts total() const {
        UtsCounts c;
        for (const Stripe &s : stripes_) {
            c.nodes += s.nodes.load(std::memory_order_relaxed);
            c.leaves += s.leaves.load(std::memory_order_relaxed);
            c.max_depth = std::max(c.max_depth, s.max_depth.load(std::memory_order_relaxed));
        }
        return c;
    }

  private:
    struct alignas(128) Stripe {
        std::atomic<uint64_t> nodes{0};
        std::atomic<uint64_t> leaves{0};
        std::atomic<uint32_t> max_depth{0};
    };
    Stripe stripes_[STRIPES];
};

// Checks a search's counts (as uts::verify via the runner's UtsCheck): counts no tree can have
// are rejected; T1 (depth 10) must have its published node count (and the serial twin's leaves
// and depth); any other depth must have `serial`'s counts. Returns the failure, or "".
inline std::string uts_check(const UtsParams &p, const UtsCounts &got, const UtsCounts *serial) {
    std::string tree = "UTS -t 1 -a 3 -d " + std::to_string(p.depth) + " -b 4 -r 19: ";
    if (got.nodes == 0) {
        return tree + "no nodes counted (the root is a node)";
    }
    if (got.leaves == 0 || got.leaves > got.nodes) {
        return tree + std::to_string(got.leaves) + " leaves for " + std::to_string(got.nodes) +
               " nodes";
    }
    if (got.max_depth >= got.nodes) {
        return tree + "depth " + std::to_string(got.max_depth) + " with only " +
               std::to_string(got.nodes) + " nodes";
    }
    UtsCounts want;
    if (p.depth == UTS_T1_DEPTH) {
        want.nodes = UTS_T1_NODES;
        want.leaves = UTS_T1_LEAVES;
        want.max_depth = static_cast<uint32_t>(UTS_T1_DEPTH);
    } else {
        want = *serial;
    }
    if (got == want) {
        return "";
    }
    return tree + "counted " + got.to_string() + ", expected " + want.to_string();
}

// ---- sort ----------------------------------------------------------------------------------
//
// Merge sort of n keys from a splitmix64 stream (as sort.rs): the halves are sorted with `join`
// down to SORT_CUTOFF keys (std::sort below, as slice::sort_unstable), then merged into the
// scratch buffer or back, ping-ponging; a merge of more than MERGE_CUTOFF keys splits the longer
// run at its midpoint, finds the split point of the other by binary search, and merges the two
// pairs with `join`.

constexpr uint64_t SORT_MAX_N = 1000000000;
constexpr std::size_t SORT_CUTOFF = 4096;
constexpr std::size_t MERGE_CUTOFF = 8192;
constexpr uint64_t SORT_SEED = 0x5EED00005027ull;

// The n keys (as sort::input).
inline std::vector<uint64_t> sort_input(uint64_t n) {
    std::vector<uint64_t> v(n);
    uint64_t state = SORT_SEED;
    for (uint64_t i = 0; i < n; ++i) {
        v[i] = splitmix64(state);
    }
    return v;
}

// Merges the sorted runs a and b into out, selecting without a data-dependent branch.
inline void merge_seq(const uint64_t *a, std::size_t na, const uint64_t *b, std::size_t nb,
                      uint64_t *out) {
    std::size_t i = 0, j = 0;
    while (i < na && j < nb) {
        uint64_t x = a[i], y = b[j];
        bool take_b = y < x;
        out[i + j] = take_b ? y : x;
        j += take_b;
        i += !take_b;
    }
    std::size_t k = i + j;
    std::memcpy(out + k, a + i, (na - i) * sizeof(uint64_t));
    std::memcpy(out + k + (na - i), b + j, (nb - j) * sizeof(uint64_t));
}

template <class F>
void merge_rec(const F &f, const uint64_t *a, std::size_t na, const uint64_t *b, std::size_t nb,
               uint64_t *out) {
    if (na + nb <= MERGE_CUTOFF) {
        merge_seq(a, na, b, nb, out);
        return;
    }
    if (na < nb) {
        std::swap(a, b);
        std::swap(na, nb);
    }
    std::size_t ia = na / 2;
    std::size_t ib = static_cast<std::size_t>(std::lower_bound(b, b + nb, a[ia]) - b);
    f.join([&] { merge_rec(f, a, ia, b, ib, out); },
           [&] { merge_rec(f, a + ia, na - ia, b + ib, nb - ib, out + ia + ib); });
}

// Sorts src[0..len) with buf as scratch; the result is in buf when into_buf, else in src.
template <class F>
void sort_rec(const F &f, uint64_t *src, uint64_t *buf, std::size_t len, bool into_buf) {
    if (len <= SORT_CUTOFF) {
        std::sort(src, src + len);
        if (into_buf) {
            std::memcpy(buf, src, len * sizeof(uint64_t));
        }
        return;
    }
    std::size_t mid = len / 2;
    f.join([&] { sort_rec(f, src, buf, mid, !into_buf); },
           [&] { sort_rec(f, src + mid, buf + mid, len - mid, !into_buf); });
    if (into_buf) {
        merge_rec(f, src, mid, src + mid, len - mid, buf);
    } else {
        merge_rec(f, buf, mid, buf + mid, len - mid, src);
    }
}

struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
};

// Sorts v[0..n) (the scratch buffer is zeroed memory from calloc, as Rust's vec![0; n]).
template <class F> void sort_with(const F &f, uint64_t *v, std::size_t n) {
    std::unique_ptr<uint64_t, FreeDeleter> buf(
        static_cast<uint64_t *>(std::calloc(n == 0 ? 1 : n, sizeof(uint64_t))));
    if (!buf) {
        throw std::bad_alloc();
    }
    sort_rec(f, v, buf.get(), n, false);
}

// ---- matmul --------------------------------------------------------------------------------
//
// C = A B for n x n row-major f64 matrices, n a power of two (as matmul.rs): C's quadrants are
// each the sum of two quadrant products; the four products with the first half of the inner
// dimension run as join(join(..), join(..)), then the four with the second half; blocks of side
// MATMUL_THRESHOLD or less are multiplied by an i-k-j loop. Every entry is summed in k order, so
// the result is bit for bit the Rust kernel's (no fused multiply-add: -ffp-contract=off).

constexpr uint64_t MATMUL_MAX_N = 8192;
constexpr std::size_t MATMUL_THRESHOLD = 64;
constexpr uint64_t MATMUL_SEED = 0x6D61746D756C0001ull;
constexpr uint64_t FREIVALDS_SEED = 0x6672656976616C64ull;
constexpr int FREIVALDS_VECTORS = 2;

// The inputs A and B (as matmul::inputs): entries uniform in [-1, 1), multiples of 2^-52.
inline void matmul_inputs(uint64_t n, std::vector<double> &a, std::vector<double> &b) {
    std::size_t len = static_cast<std::size_t>(n * n);
    uint64_t state = MATMUL_SEED ^ n;
    auto next = [&state] {
        return static_cast<double>(splitmix64(state) >> 11) * (1.0 / 4503599627370496.0) - 1.0;
    };
    a.resize(len);
    b.resize(len);
    for (auto &x : a) {
        x = next();
    }
    for (auto &x : b) {
        x = next();
    }
}

// A square block of a row-major matrix: its top-left entry and the row stride.
template <class T> struct Block {
    T *p;
    std::size_t stride;

    Block quad(std::size_t h, std::size_t qi, std::size_t qj) const {
        return Block{p + qi * h * stride + qj * h, stride};
    }
};

inline void matmul_leaf(std::size_t m, Block<const double> a, Block<const double> b,
                        Block<double> c) {
    for (std::size_t i = 0; i < m; ++i) {
        double *__restrict ci = c.p + i * c.stride;
        const double *__restrict ai = a.p + i * a.stride;
        for (std::size_t k = 0; k < m; ++k) {
            const double aik = ai[k];
            const double *__restrict bk = b.p + k * b.stride;
            for (std::size_t j = 0; j < m; ++j) {
                ci[j] += aik * bk[j];
            }
        }
    }
}

template <class F>
void matmul_rec(const F &f, std::size_t m, Block<const double> a, Block<const double> b,
                Block<double> c) {
    if (m <= MATMUL_THRESHOLD) {
        matmul_leaf(m, a, b, c);
        return;
    }
    std::size_t h = m / 2;
    Block<double> c11 = c.quad(h, 0, 0), c12 = c.quad(h, 0, 1), c21 = c.quad(h, 1, 0),
                  c22 = c.quad(h, 1, 1);
    for (std::size_t k = 0; k < 2; ++k) {
        f.join(
            [&] {
                f.join([&] { matmul_rec(f, h, a.quad(h, 0, k), b.quad(h, k, 0), c11); },
                       [&] { matmul_rec(f, h, a.quad(h, 0, k), b.quad(h, k, 1), c12); });
            },
            [&] {
                f.join([&] { matmul_rec(f, h, a.quad(h, 1, k), b.quad(h, k, 0), c21); },
                       [&] { matmul_rec(f, h, a.quad(h, 1, k), b.quad(h, k, 1), c22); });
            });
    }
}

// C = A B (C is zeroed first, as matmul.rs's prepare does inside the timed call).
template <class F>
void matmul_with(const F &f, std::size_t n, const double *a, const double *b, double *c) {
    std::fill(c, c + n * n, 0.0);
    matmul_rec(f, n, Block<const double>{a, n}, Block<const double>{b, n}, Block<double>{c, n});
}

// Freivalds' check of C = A B (as matmul::verify): for two deterministic random +-1 vectors r,
// compares A (B r) with C r row by row, within row i's rounding bound
// 4 n eps (sum_k |A_ik| |B_k|_1 + sum_j |C_ij|). Returns the failure, or "".
inline std::string matmul_check(std::size_t n, const double *a, const double *b, const double *c) {
    std::vector<double> b_norm(n), tol(n), r(n), br(n);
    for (std::size_t k = 0; k < n; ++k) {
        double s = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
            s += std::fabs(b[k * n + j]);
        }
        b_norm[k] = s;
    }
    const double eps = 2.220446049250313e-16;
    for (std::size_t i = 0; i < n; ++i) {
        double ab = 0.0, cc = 0.0;
        for (std::size_t k = 0; k < n; ++k) {
            ab += std::fabs(a[i * n + k]) * b_norm[k];
        }
        for (std::size_t j = 0; j < n; ++j) {
            cc += std::fabs(c[i * n + j]);
        }
        tol[i] = 4.0 * static_cast<double>(n) * eps * (ab + cc);
    }
    auto dot = [n](const double *u, const double *v) {
        double s = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
            s += u[j] * v[j];
        }
        return s;
    };
    uint64_t state = FREIVALDS_SEED;
    for (int t = 0; t < FREIVALDS_VECTORS; ++t) {
        for (auto &x : r) {
            x = (splitmix64(state) >> 63) == 0 ? 1.0 : -1.0;
        }
        for (std::size_t k = 0; k < n; ++k) {
            br[k] = dot(b + k * n, r.data());
        }
        for (std::size_t i = 0; i < n; ++i) {
            double want = dot(a + i * n, br.data());
            double got = dot(c + i * n, r.data());
            double err = std::fabs(got - want);
            if (std::isnan(err) || err > tol[i]) {
                char msg[256];
                std::snprintf(msg, sizeof msg,
                              "matmul(%zu): row %zu of C fails Freivalds' check: (C r)_%zu = %.17g, "
                              "(A (B r))_%zu = %.17g, difference %.3e above tolerance %.3e",
                              n, i, i, got, i, want, err, tol[i]);
                return msg;
            }
        }
    }
    return "";
}

// ---- heat ----------------------------------------------------------------------------------
//
// 2-D heat diffusion (as heat.rs): HEAT_STEPS explicit five-point steps on an n x n grid whose
// boundary is fixed; each step's interior rows are split in halves with `join` down to
// HEAT_GRAIN_ROWS rows, each half writing its own rows of the other buffer. Every point is the
// same expression of the same values in every version, so the grids are bit for bit equal (no
// fused multiply-add: -ffp-contract=off).

constexpr uint64_t HEAT_MAX_N = 16384;
constexpr int HEAT_STEPS = 20;
constexpr std::size_t HEAT_GRAIN_ROWS = 8;
constexpr double HEAT_K = 0.1;
constexpr double HEAT_HOT = 100.0;
constexpr uint64_t HEAT_SEED = 0x6865617400000001ull;

// The initial grid (as heat::input): row 0 at 100, the rest of the boundary 0, the interior
// uniform in [0, 1) (multiples of 2^-53), row by row.
inline std::vector<double> heat_input(uint64_t n) {
    std::size_t s = static_cast<std::size_t>(n);
    std::vector<double> g(s * s, 0.0);
    std::fill(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(s), HEAT_HOT);
    uint64_t state = HEAT_SEED ^ n;
    for (std::size_t i = 1; i + 1 < s; ++i) {
        for (std::size_t j = 1; j + 1 < s; ++j) {
            g[i * s + j] =
                static_cast<double>(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
        }
    }
    return g;
}

// Rows first..first+rows of the new grid `out` (which points at row `first`) from `old`.
inline void heat_update_rows(const double *old, std::size_t n, std::size_t first, double *out,
                             std::size_t rows) {
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t i = first + r;
        const double *__restrict up = old + (i - 1) * n;
        const double *__restrict mid = old + i * n;
        const double *__restrict down = old + (i + 1) * n;
        double *__restrict o = out + r * n;
        for (std::size_t j = 1; j + 1 < n; ++j) {
            double c = mid[j];
            o[j] = c + HEAT_K * (up[j] + down[j] + mid[j - 1] + mid[j + 1] - 4.0 * c);
        }
    }
}

template <class F>
void heat_step_rec(const F &f, const double *old, std::size_t n, std::size_t first, double *out,
                   std::size_t rows) {
    if (rows <= HEAT_GRAIN_ROWS) {
        heat_update_rows(old, n, first, out, rows);
        return;
    }
    std::size_t half = rows / 2;
    f.join([&] { heat_step_rec(f, old, n, first, out, half); },
           [&] { heat_step_rec(f, old, n, first + half, out + half * n, rows - half); });
}

// HEAT_STEPS steps on `grid` (the result replaces it); the second buffer is a copy of the grid,
// made inside the timed call, as heat.rs's prepare does.
template <class F> void heat_with(const F &f, std::size_t n, std::vector<double> &grid) {
    std::vector<double> next(grid);
    for (int s = 0; s < HEAT_STEPS; ++s) {
        heat_step_rec(f, grid.data(), n, 1, next.data() + n, n - 2);
        std::swap(grid, next);
    }
}

// ---- command line and timing ---------------------------------------------------------------

enum class Kernel { Fib, Fj, NQueens, Uts, Sort, Matmul, Heat };

struct Args {
    Kernel kernel;
    uint64_t n;
    unsigned threads;
    uint64_t runs;
};

constexpr unsigned MAX_THREADS = 1024;
constexpr uint64_t MAX_RUNS = 1000000;

[[noreturn]] inline void usage_error(const char *prog, const std::string &why) {
    std::fprintf(
        stderr,
        "%s: %s\nusage: %s <fib|fj|nqueens|uts|sort|matmul|heat> <n> <threads> <runs>\n"
        "  fib: n <= %llu; fj: n repetitions of %zu tasks, n <= %llu; nqueens: side n <= %llu\n"
        "  uts: depth 1..=%llu of -t 1 -a 3 -b 4 -r 19 -d n; sort: 1..=%llu keys\n"
        "  matmul: side, a power of two <= %llu; heat: grid side 3..=%llu\n"
        "  threads: 1..=%u; runs: 1..=%llu\n",
        prog, why.c_str(), prog, static_cast<unsigned long long>(FIB_MAX_N), FJ_TASKS,
        static_cast<unsigned long long>(FJ_MAX_REPS), static_cast<unsigned long long>(NQ_MAX_N),
        static_cast<unsigned long long>(UTS_MAX_DEPTH), static_cast<unsigned long long>(SORT_MAX_N),
        static_cast<unsigned long long>(MATMUL_MAX_N), static_cast<unsigned long long>(HEAT_MAX_N),
        MAX_THREADS, static_cast<unsigned long long>(MAX_RUNS));
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
    struct Spec {
        const char *name;
        Kernel kernel;
        uint64_t min_n, max_n;
        const char *n_is;
    };
    static const Spec specs[] = {
        {"fib", Kernel::Fib, 0, FIB_MAX_N, "fib(n)"},
        {"fj", Kernel::Fj, 0, FJ_MAX_REPS, "repetitions"},
        {"nqueens", Kernel::NQueens, 0, NQ_MAX_N, "board side"},
        {"uts", Kernel::Uts, 1, UTS_MAX_DEPTH, "tree depth"},
        {"sort", Kernel::Sort, 1, SORT_MAX_N, "keys"},
        {"matmul", Kernel::Matmul, 1, MATMUL_MAX_N, "matrix side, a power of two"},
        {"heat", Kernel::Heat, 3, HEAT_MAX_N, "grid side"},
    };
    const Spec *spec = nullptr;
    for (const Spec &s : specs) {
        if (std::strcmp(argv[1], s.name) == 0) {
            spec = &s;
        }
    }
    if (spec == nullptr) {
        usage_error(prog, std::string("unknown kernel '") + argv[1] + "'");
    }
    Args a{};
    a.kernel = spec->kernel;
    bool ok = parse_u64(argv[2], spec->max_n, a.n) && a.n >= spec->min_n;
    if (ok && a.kernel == Kernel::Matmul) {
        ok = (a.n & (a.n - 1)) == 0;
    }
    if (!ok) {
        usage_error(prog, std::string("bad n '") + argv[2] + "' for " + argv[1] + " (" +
                              spec->n_is + ", a whole number from " +
                              std::to_string(spec->min_n) + " to " + std::to_string(spec->max_n) +
                              ")");
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

inline std::string hex64(uint64_t x) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
    return buf;
}

// The first index at which two grids differ bit for bit, or `len` if none.
inline std::size_t first_difference(const double *a, const double *b, std::size_t len) {
    for (std::size_t i = 0; i < len; ++i) {
        if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
            return i;
        }
    }
    return len;
}

// What the checks of a kernel compare against, computed once before the first run.
struct Expected {
    UtsParams uts{};
    UtsCounts uts_serial;                      // uts at depths other than T1's
    std::vector<uint64_t> sorted;              // sort: std::sort of the input
    std::vector<double> mat_a, mat_b;          // matmul's inputs
    std::vector<double> heat;                  // heat: the serial twin's grid
};

inline Expected expected_for(const Args &args) {
    Expected e;
    switch (args.kernel) {
    case Kernel::Uts:
        e.uts = UtsParams::t1_family(args.n);
        if (args.n != UTS_T1_DEPTH) {
            e.uts_serial = uts_serial(e.uts);
        }
        break;
    case Kernel::Sort:
        e.sorted = sort_input(args.n);
        std::sort(e.sorted.begin(), e.sorted.end());
        break;
    case Kernel::Matmul:
        matmul_inputs(args.n, e.mat_a, e.mat_b);
        break;
    case Kernel::Heat:
        e.heat = heat_input(args.n);
        heat_with(SerialFork{}, static_cast<std::size_t>(args.n), e.heat);
        break;
    default:
        break;
    }
    return e;
}

// Runs the kernel `args.runs` times on `rt`, printing one line per run; returns the exit status.
// `Runtime` provides: `uint64_t fib(uint64_t n)`, `void fj(uint64_t reps, Counter *counters)`
// (FJ_TASKS counters), `uint64_t nqueens(uint64_t n)`, `UtsCounts uts(const UtsParams &)`,
// `void sort(uint64_t *v, std::size_t n)`, `void matmul(std::size_t n, const double *a,
// const double *b, double *c)` and `void heat(std::size_t n, std::vector<double> &grid)`.
template <class Runtime> int run_all(Runtime &rt, const Args &args) {
    using clock = std::chrono::steady_clock;
    const char *report_env = std::getenv("MAGPIE_PEERS_REPORT");
    const bool report = report_env != nullptr && *report_env != '\0' &&
                        std::strcmp(report_env, "0") != 0;
    const Expected expected = expected_for(args);
    const std::size_t n = static_cast<std::size_t>(args.n);
    bool all_ok = true;
    for (uint64_t run = 1; run <= args.runs; ++run) {
        std::string failure;
        std::string what; // for MAGPIE_PEERS_REPORT
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
            what = "value=" + std::to_string(got);
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
            what = "value=" + std::to_string(got);
            break;
        }
        case Kernel::Uts: {
            auto t0 = clock::now();
            UtsCounts got = rt.uts(expected.uts);
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            failure = uts_check(expected.uts, got, &expected.uts_serial);
            what = got.to_string() + " sha1=" + sha1::active();
            break;
        }
        case Kernel::Sort: {
            std::vector<uint64_t> v = sort_input(args.n);
            auto t0 = clock::now();
            rt.sort(v.data(), n);
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            if (v != expected.sorted) {
                std::size_t i = 0;
                while (i < n && v[i] == expected.sorted[i]) {
                    ++i;
                }
                failure = "sort(" + std::to_string(n) + "): key " + std::to_string(i) + " is " +
                          std::to_string(v[i]) + ", std::sort of the input has " +
                          std::to_string(expected.sorted[i]);
            }
            what = "fnv1a=" + hex64(fnv1a_words(v.data(), v.size()));
            break;
        }
        case Kernel::Matmul: {
            // C comes zeroed by calloc, as Rust's vec![0.0; n * n]; the kernel zeroes it again
            // inside the timed call, as matmul.rs does.
            std::unique_ptr<double, FreeDeleter> c(
                static_cast<double *>(std::calloc(n * n, sizeof(double))));
            if (!c) {
                throw std::bad_alloc();
            }
            auto t0 = clock::now();
            rt.matmul(n, expected.mat_a.data(), expected.mat_b.data(), c.get());
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            failure = matmul_check(n, expected.mat_a.data(), expected.mat_b.data(), c.get());
            what = "fnv1a=" + hex64(fnv1a_doubles(c.get(), n * n));
            break;
        }
        case Kernel::Heat: {
            std::vector<double> grid = heat_input(args.n);
            auto t0 = clock::now();
            rt.heat(n, grid);
            secs = std::chrono::duration<double>(clock::now() - t0).count();
            std::size_t k = first_difference(grid.data(), expected.heat.data(), n * n);
            if (grid.size() != n * n) {
                failure = "heat(" + std::to_string(n) + "): " + std::to_string(grid.size()) +
                          " points";
            } else if (k < n * n) {
                char msg[200];
                std::snprintf(msg, sizeof msg,
                              "heat(%zu): point (%zu, %zu) is %.17g, the serial twin gives %.17g",
                              n, k / n, k % n, grid[k], expected.heat[k]);
                failure = msg;
            }
            what = "fnv1a=" + hex64(fnv1a_doubles(grid.data(), grid.size()));
            break;
        }
        }
        bool ok = failure.empty();
        if (!ok) {
            all_ok = false;
            std::fprintf(stderr, "run %llu: %s\n", static_cast<unsigned long long>(run),
                         failure.c_str());
        }
        if (report) {
            std::fprintf(stderr, "report run=%llu %s\n", static_cast<unsigned long long>(run),
                         what.c_str());
        }
        std::printf("time_s=%.9f verified=%d\n", secs, ok ? 1 : 0);
        std::fflush(stdout);
    }
    return all_ok ? 0 : 1;
}

// main() of a peer program: parses the arguments, chooses and self-tests the SHA-1 for uts,
// builds `Runtime(threads)`, warms it up with a small untimed fib, and runs the kernel. A C++
// exception from the runtime exits with status 1.
template <class Runtime> int peer_main(int argc, char **argv) {
    Args args = parse_args(argc, argv);
    if (args.kernel == Kernel::Uts) {
        std::string bad = sha1::select();
        if (!bad.empty()) {
            std::fprintf(stderr, "%s: SHA-1 self-test failed (%s): %s\n", argv[0],
                         sha1::active(), bad.c_str());
            return 1;
        }
    }
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
