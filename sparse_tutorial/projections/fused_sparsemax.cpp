// The exact sparsemax and 1.5-entmax projections and their backward passes on the CPU, for rows of float
// or double scores.
//
// sparse_tutorial/fused.py compiles this file when it is first needed (about a second) and calls it
// through ctypes on contiguous (rows, n) tensors. The algorithms are those of the eager code
// (sparse_tutorial.sparsemax_eager and sparse_tutorial.entmax_eager): shift each row by its max (entmax
// also halves it, p = max(z/2 - tau, 0)^2), so that the threshold tau lies in [-1, 0), and search tau
// from the lower bound -1:
//   * sparsemax: Michelot's step  tau <- (sum_{z > tau} z - 1) / |{z > tau}|, the threshold of the
//     current support, which is again a lower bound; it stops when the support stops changing, which is
//     the optimality condition. The sum runs over the scores themselves (never over z - tau), so no
//     large terms cancel: on a nearly uniform row of 65,536 floats the old form tau + (sum(z - tau) - 1)/k
//     lost all digits of tau ~ -1/k.
//   * 1.5-entmax: on the current support S the threshold solves sum_S (z - tau)^2 = 1, a quadratic whose
//     smaller root is exact if S is the final support, which holds iff the root lies below min_S z; until
//     then a Newton step on sum max(z - tau, 0)^2 - 1 (convex, decreasing) moves tau up and stays a lower
//     bound.
// Sums over a row are accumulated in double whatever the scores' type (in two levels: SUM_BLOCK columns
// in the scores' type, then into double, so that conversions are rare), so float32 weights are as
// accurate as float32 can hold them. Each row stops as soon as it is exact.
//
// Speed comes from one data layout idea. All arithmetic runs on "columns": vectors of as many scores as
// fill one SIMD register of the CPU the kernel is compiled for (64 bytes with AVX-512, 32 with AVX/AVX2,
// 16 otherwise), written with the GCC/Clang vector extension so that every operation is one instruction.
// (A width the CPU lacks would be emulated through memory, which is slower than plain PyTorch.)
//   * Short rows (n <= SHORT_ROW): a block of rows, one per lane, is transposed so that lane b of
//     column i holds score i of row b. Each lane is then an independent problem: sums over a row are sums
//     down the columns, lane by lane, with no horizontal (across-lane) sums, and the rows step together.
//   * Long rows: the row itself is cut into columns (the last one padded with -inf). Each lane holds a
//     partial sum; after each pass the lanes are added up and the total is given back to every lane.
// Either way the per-lane code of project() is the same. The backward passes need only one sum across
// lanes per row, so they read every row in place, in columns of consecutive scores.
//
// Threads: with threads > 1 the rows are split over OpenMP threads; with threads == 1 no OpenMP call is
// made at all, which is what fused.py asks for in a forked child (GNU OpenMP cannot run a parallel region
// in a child forked after the parent ran one: it waits for threads that were not copied).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

// Helpers that take or return vectors are always inlined: a vector wider than the registers (the double
// accumulators are twice as wide) would otherwise be passed through memory.
// (GCC still notes that such a function would have another ABI without AVX-512: -Wpsabi, silenced.)
#define INLINE inline __attribute__((always_inline))
#pragma GCC diagnostic ignored "-Wpsabi"

#if defined(__AVX512F__)
#define VECTOR_BYTES 64
#elif defined(__AVX__)
#define VECTOR_BYTES 32
#else
#define VECTOR_BYTES 16
#endif

template <typename T>
struct Column {
    typedef T type __attribute__((vector_size(VECTOR_BYTES)));
    typedef double wide __attribute__((vector_size(VECTOR_BYTES / sizeof(T) * sizeof(double))));
    static constexpr int lanes = VECTOR_BYTES / sizeof(T);
};

template <typename T>
using Vec = typename Column<T>::type;  // one register of scores
template <typename T>
using Wide = typename Column<T>::wide;  // the same lanes in double, for sums

constexpr int64_t SHORT_ROW = 128;          // rows up to this length go one per lane (measured best)
constexpr int64_t PARALLEL_MIN = 1 << 15;  // fewer scores than this: one thread (starting more costs more)
constexpr int64_t SUM_BLOCK = 16;          // columns summed in T before the partial sum joins the double total
constexpr int MAX_STEPS = 200;              // safety net; the searches settle in a handful of steps

enum class Projection { sparsemax, entmax15 };

template <typename T>
static INLINE Wide<T> widen(Vec<T> v) {
    return __builtin_convertvector(v, Wide<T>);
}

template <typename T>
static INLINE Vec<T> narrow(Wide<T> v) {
    return __builtin_convertvector(v, Vec<T>);
}

// In long-row mode the lanes hold partial results of one row: combine them into every lane.
template <typename V>
static INLINE V all_lanes_sum(V partial) {
    auto total = partial[0];
    for (unsigned b = 1; b < sizeof(V) / sizeof(partial[0]); ++b) total += partial[b];
    return V{} + total;
}

template <typename V>
static INLINE V all_lanes_max(V partial) {
    auto best = partial[0];
    for (unsigned b = 1; b < sizeof(V) / sizeof(partial[0]); ++b) best = partial[b] > best ? partial[b] : best;
    return V{} + best;
}

// The support S = {z > tau} of every lane and what the threshold search needs of it.
template <typename T>
struct Support {
    Wide<T> size{}, sum{}, sum_sq{};  // |S|, sum_S z, sum_S z^2 (entmax only)
    Vec<T> min{};                      // min_S z (entmax only)
};

template <typename T, Projection P, bool ROWS_IN_LANES>
static INLINE Support<T> support_at(const Vec<T>* columns, int64_t count, Vec<T> tau) {
    using V = Vec<T>;
    // ACC independent partial sums, so that a pass waits on the adder's throughput, not on the latency of
    // one chain of count dependent additions (4x faster on rows of 32).
    constexpr int ACC = 4;
    const V zero = V{}, one = zero + 1;
    V size[ACC] = {}, min[ACC];
    for (V& m : min) m = zero + INFINITY;
    Support<T> s;
    auto visit = [&](V z, int a, V& sum, V& sum_sq) {
        const auto above = z > tau;
        const V kept = above ? z : zero;
        size[a] += above ? one : zero;
        sum += kept;
        if (P == Projection::entmax15) {
            sum_sq += kept * kept;
            min[a] = (above & (z < min[a])) ? z : min[a];
        }
    };
    for (int64_t start = 0; start < count; start += SUM_BLOCK) {
        V sum[ACC] = {}, sum_sq[ACC] = {};  // each of at most SUM_BLOCK terms of one sign: exact enough in T
        const int64_t end = std::min(count, start + SUM_BLOCK);
        int64_t i = start;
        for (; i + ACC <= end; i += ACC)
            for (int a = 0; a < ACC; ++a) visit(columns[i + a], a, sum[a], sum_sq[a]);
        for (; i < end; ++i) visit(columns[i], 0, sum[0], sum_sq[0]);
        for (int a = 1; a < ACC; ++a) sum[0] += sum[a], sum_sq[0] += sum_sq[a];
        s.sum += widen<T>(sum[0]);
        if (P == Projection::entmax15) s.sum_sq += widen<T>(sum_sq[0]);
    }
    for (int a = 1; a < ACC; ++a) {
        size[0] += size[a];
        min[0] = min[a] < min[0] ? min[a] : min[0];
    }
    s.size = widen<T>(size[0]);  // counts are exact in T up to 2^24 per lane
    s.min = min[0];
    if (!ROWS_IN_LANES) {
        s.size = all_lanes_sum(s.size);
        s.sum = all_lanes_sum(s.sum);
        s.sum_sq = all_lanes_sum(s.sum_sq);
        s.min = -all_lanes_max<V>(-s.min);
    }
    return s;
}

// Replaces columns[0..count) by the weights of their lanes' rows, and for entmax writes their square
// roots max(z/2 - tau, 0) to roots[0..count) (the backward pass needs them; a sqrt there would cost more
// than the whole forward pass); returns a lane mask of rows that contain NaN or +inf (their weights are
// meaningless; the caller raises an error).
template <typename T, Projection P, bool ROWS_IN_LANES>
static Vec<T> project(Vec<T>* columns, Vec<T>* roots, int64_t count) {
    using V = Vec<T>;
    using W = Wide<T>;
    const V zero = V{}, one = zero + 1, infinity = zero + INFINITY;
    V row_max = -infinity, invalid = zero;
    for (int64_t i = 0; i < count; ++i) {
        row_max = columns[i] > row_max ? columns[i] : row_max;
        invalid = columns[i] < infinity ? invalid : one;  // NaN fails every comparison
    }
    if (!ROWS_IN_LANES) {
        row_max = all_lanes_max(row_max);
        invalid = all_lanes_max(invalid);
    }
    const V shift = row_max == -infinity ? zero : row_max;  // an all -inf row stays -inf: weights 0
    for (int64_t i = 0; i < count; ++i)  // the scores z (halved for entmax) every step reads, in place
        columns[i] = P == Projection::entmax15 ? (columns[i] - shift) * T(0.5) : columns[i] - shift;
    // The sums are in double; each step's candidate threshold is rounded to T before it is compared or
    // used, because every use of tau (the support test, the weights) is in T. All decisions are thus
    // made on vectors of register width: on double vectors twice as wide GCC spills the comparison masks
    // to memory, which took most of a step's time.
    V tau = zero - 1, previous_size = zero - 1;
    for (int step = 0; step < MAX_STEPS; ++step) {
        const Support<T> s = support_at<T, P, ROWS_IN_LANES>(columns, count, tau);
        const V size = narrow<T>(s.size);  // exact: see support_at
        const auto empty = size == 0;      // an all -inf row: nothing to do
        const W divisor = widen<T>(empty ? one : size);
        std::remove_const_t<decltype(empty)> settled;
        if (P == Projection::sparsemax) {
            const V threshold = narrow<T>((s.sum - 1) / divisor);
            settled = empty | (size == previous_size);  // same support twice: tau is its threshold
            tau = empty ? tau : (settled | (threshold > tau) ? threshold : tau);
            previous_size = size;
        } else {
            const W discriminant = s.sum * s.sum - s.size * (s.sum_sq - 1), wide_tau = widen<T>(tau);
            W root_of_discriminant = discriminant;
            for (unsigned b = 0; b < sizeof(W) / sizeof(double); ++b)
                root_of_discriminant[b] = std::sqrt(std::max(discriminant[b], 0.0));
            const V root = narrow<T>((s.sum - root_of_discriminant) / divisor);
            const auto exact = (narrow<T>(discriminant) >= 0) & (root < s.min);
            const W linear = s.sum - s.size * wide_tau;
            const W quadratic = s.sum_sq - 2 * wide_tau * s.sum + s.size * wide_tau * wide_tau;
            const V newton = narrow<T>(wide_tau + (quadratic - 1) / (2 * (linear + widen<T>(empty ? one : zero))));
            const auto stalled = ~(newton > tau);  // rounding ended the climb: tau is the threshold
            settled = empty | exact | stalled;
            tau = exact ? root : (settled ? tau : newton);
        }
        bool all_settled = true;
        for (int b = 0; b < Column<T>::lanes; ++b) all_settled = all_settled && settled[b];
        if (all_settled) break;
    }
    for (int64_t i = 0; i < count; ++i) {
        const V above = columns[i] - tau;
        const V root = above > 0 ? above : zero;
        columns[i] = P == Projection::entmax15 ? root * root : root;
        if (P == Projection::entmax15) roots[i] = root;
    }
    return invalid;
}

// Calls body(i, count) for the chunks [i, i + count) of a row of n scores: whole vectors, then the rest.
// (Inlined, the whole-vector calls see a constant count, so their loads and stores are single vector moves.)
template <typename T, typename Body>
static void for_each_chunk(int64_t n, Body body) {
    constexpr int LANES = Column<T>::lanes;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) body(i, LANES);
    if (i < n) body(i, n - i);
}

template <typename T>
static Vec<T> load_chunk(const T* data, int64_t count) {
    Vec<T> chunk = Vec<T>{};  // lanes past count stay 0
    std::memcpy(&chunk, data, count * sizeof(T));
    return chunk;
}

// The vector-Jacobian product of one row, in place of the rows, with one sum across lanes per row:
//   sparsemax  s * (v - mean_S v)                          (s: the support's indicator)
//   entmax15   g * v - (sum g * v / sum g) * g             (g = sqrt(p), zero off the support)
// `saved` is what the forward pass left: the weights p (sparsemax) or their roots g (entmax). Off the
// support the gradient is 0 whatever v holds there (even inf or NaN: it is never multiplied).
template <typename T, Projection P>
static void backward_row(const T* saved, const T* grad_output, T* grad, int64_t n) {
    using V = Vec<T>;
    const V zero = V{}, one = zero + 1;
    auto factor = [&](int64_t i, int64_t count) {  // g, or the indicator
        const V chunk = load_chunk(saved + i, count);
        return P == Projection::sparsemax ? (chunk > 0 ? one : zero) : chunk;
    };
    V weighted = zero, norm = zero;
    for_each_chunk<T>(n, [&](int64_t i, int64_t count) {
        const V g = factor(i, count);
        weighted += g > 0 ? g * load_chunk(grad_output + i, count) : zero;
        norm += g;
    });
    const V total_norm = all_lanes_sum(norm);
    const V mean = total_norm > 0 ? all_lanes_sum(weighted) / total_norm : zero;
    for_each_chunk<T>(n, [&](int64_t i, int64_t count) {
        const V g = factor(i, count);
        const V chunk = g > 0 ? g * load_chunk(grad_output + i, count) - mean * g : zero;
        std::memcpy(grad + i, &chunk, count * sizeof(T));
    });
}

// Transposes the LANES x LANES tile of scores tile[row][lane] in registers. Round h (h = 1, 2, 4, ...)
// swaps the off-diagonal h x h blocks of every 2h x 2h block: rows i and i + h (i & h == 0) exchange
// the lanes j with j & h set in row i for the lanes j - h of row i + h. Each exchange is two shuffles.
template <typename V, int H, size_t... J>
static INLINE void exchange(V& upper, V& lower, std::index_sequence<J...>) {
    constexpr int L = sizeof...(J);
    const V new_upper = __builtin_shufflevector(upper, lower, ((J & H) ? L + J - H : J)...);
    const V new_lower = __builtin_shufflevector(upper, lower, ((J & H) ? L + J : J + H)...);
    upper = new_upper;
    lower = new_lower;
}

template <typename T, int H = 1>
static INLINE void transpose(Vec<T>* tile) {
    constexpr int LANES = Column<T>::lanes;
    if constexpr (H < LANES) {
        for (int i = 0; i < LANES; ++i)
            if (!(i & H)) exchange<Vec<T>, H>(tile[i], tile[i + H], std::make_index_sequence<LANES>{});
        transpose<T, 2 * H>(tile);
    }
}

// Short rows: the first `block` rows of a (rows, n) matrix, row b into lane b of columns[i]; lanes past
// the last row repeat it (they are computed and never written back). A full block is moved a square tile
// of LANES x LANES scores at a time: LANES vector loads, a transpose in registers, LANES vector stores
// (moving the scores one by one took half the forward pass's time at n = 32). A partial block, and the
// last n % LANES scores of each row, are moved one by one.
template <typename T>
static void load_block(const T* matrix, int64_t block, int64_t n, Vec<T>* columns) {
    constexpr int LANES = Column<T>::lanes;
    int64_t tiled = 0;
    if (block == LANES) {
        for (; tiled + LANES <= n; tiled += LANES) {
            Vec<T> tile[LANES];
            for (int b = 0; b < LANES; ++b) std::memcpy(&tile[b], matrix + b * n + tiled, sizeof(Vec<T>));
            transpose<T>(tile);
            std::memcpy(columns + tiled, tile, sizeof(tile));
        }
    }
    for (int b = 0; b < LANES; ++b) {
        const T* row = matrix + std::min<int64_t>(b, block - 1) * n;
        for (int64_t i = tiled; i < n; ++i) columns[i][b] = row[i];
    }
}

template <typename T>
static void store_block(const Vec<T>* columns, int64_t block, int64_t n, T* matrix) {
    constexpr int LANES = Column<T>::lanes;
    int64_t tiled = 0;
    if (block == LANES) {
        for (; tiled + LANES <= n; tiled += LANES) {
            Vec<T> tile[LANES];
            std::memcpy(tile, columns + tiled, sizeof(tile));
            transpose<T>(tile);
            for (int b = 0; b < LANES; ++b) std::memcpy(matrix + b * n + tiled, &tile[b], sizeof(Vec<T>));
        }
    }
    for (int64_t b = 0; b < block; ++b)
        for (int64_t i = tiled; i < n; ++i) matrix[b * n + i] = columns[i][b];
}

// Long rows: one row into consecutive columns, the last one padded with -inf (no weight, no maximum).
template <typename T>
static void load_row(const T* row, int64_t n, Vec<T>* columns) {
    constexpr int LANES = Column<T>::lanes;
    std::memcpy(columns, row, n * sizeof(T));
    for (int64_t i = n; i < (n + LANES - 1) / LANES * LANES; ++i) columns[i / LANES][i % LANES] = -INFINITY;
}

template <typename T>
static void store_row(const Vec<T>* columns, int64_t n, T* row) {
    std::memcpy(row, columns, n * sizeof(T));
}

// Runs worker(k) for k in [0, tasks) and adds up what it returns. make_worker() gives each thread its
// own worker (with its own buffer). threads == 1 runs in this thread without any OpenMP call.
template <typename MakeWorker>
static int64_t for_each_task(int64_t tasks, int threads, MakeWorker make_worker) {
    int64_t total = 0;
    if (threads <= 1) {
        auto worker = make_worker();
        for (int64_t k = 0; k < tasks; ++k) total += worker(k);
        return total;
    }
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        auto worker = make_worker();
#pragma omp for schedule(static)
        for (int64_t k = 0; k < tasks; ++k) total += worker(k);
    }
    return total;
}

template <typename T, Projection P>
static int64_t forward(const T* scores, T* weights, T* roots, int64_t rows, int64_t n, int threads) {
    using V = Vec<T>;
    constexpr int LANES = Column<T>::lanes;
    threads = rows * n >= PARALLEL_MIN ? threads : 1;
    if (n <= SHORT_ROW) {
        return for_each_task((rows + LANES - 1) / LANES, threads, [&] {
            const int64_t root_columns = P == Projection::entmax15 ? n : 0;
            return [&, columns = std::vector<V>(n), root_block = std::vector<V>(root_columns)](int64_t k) mutable {
                const int64_t block = std::min<int64_t>(LANES, rows - k * LANES);
                load_block(scores + k * LANES * n, block, n, columns.data());
                const V invalid = project<T, P, true>(columns.data(), root_block.data(), n);
                store_block(columns.data(), block, n, weights + k * LANES * n);
                if (P == Projection::entmax15) store_block(root_block.data(), block, n, roots + k * LANES * n);
                int64_t invalid_rows = 0;
                for (int b = 0; b < block; ++b) invalid_rows += invalid[b] != 0;
                return invalid_rows;
            };
        });
    }
    const int64_t count = (n + LANES - 1) / LANES;
    return for_each_task(rows, threads, [&] {
        const int64_t root_columns = P == Projection::entmax15 ? count : 0;
        return [&, columns = std::vector<V>(count), root_row = std::vector<V>(root_columns)](int64_t r) mutable {
            load_row(scores + r * n, n, columns.data());
            const int64_t invalid = project<T, P, false>(columns.data(), root_row.data(), count)[0] != 0;
            store_row(columns.data(), n, weights + r * n);
            if (P == Projection::entmax15) store_row(root_row.data(), n, roots + r * n);
            return invalid;
        };
    });
}

template <typename T, Projection P>
static void backward(const T* saved, const T* grad_output, T* grad, int64_t rows, int64_t n, int threads) {
    for_each_task(rows, rows * n >= PARALLEL_MIN ? threads : 1, [&] {
        return [&](int64_t r) {
            backward_row<T, P>(saved + r * n, grad_output + r * n, grad + r * n, n);
            return int64_t{0};
        };
    });
}

// The C entry points fused.py calls: forward returns the number of rows with NaN or +inf scores and
// fills `roots` for entmax15 (sparsemax ignores it); backward takes the weights (sparsemax) or the roots
// (entmax15) as `saved`.
#define ENTRY_POINTS(NAME, PROJECTION, T)                                                                  \
    int64_t NAME##_forward_##T(const T* scores, T* weights, T* roots, int64_t rows, int64_t n,            \
                               int threads) {                                                             \
        return forward<T, PROJECTION>(scores, weights, roots, rows, n, threads);                          \
    }                                                                                                     \
    void NAME##_backward_##T(const T* saved, const T* grad_output, T* grad, int64_t rows, int64_t n,      \
                             int threads) {                                                               \
        backward<T, PROJECTION>(saved, grad_output, grad, rows, n, threads);                              \
    }

extern "C" {
ENTRY_POINTS(sparsemax, Projection::sparsemax, float)
ENTRY_POINTS(sparsemax, Projection::sparsemax, double)
ENTRY_POINTS(entmax15, Projection::entmax15, float)
ENTRY_POINTS(entmax15, Projection::entmax15, double)
// The SIMD register width in bytes this build was compiled for (fused.py records it).
int vector_bytes() { return VECTOR_BYTES; }
}
