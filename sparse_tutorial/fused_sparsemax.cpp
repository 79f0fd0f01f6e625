// The exact sparsemax projection and its backward pass on the CPU, for rows of float or double scores.
//
// sparse_tutorial/fused.py compiles this file when it is first needed (about a second) and calls it
// through ctypes on contiguous (rows, n) tensors. The algorithm is the one of the eager
// sparse_tutorial.projections.sparsemax: shift each row by its max (so the threshold tau lies in [-1, 0)),
// then Michelot steps from tau = -1,
//     tau <- tau + (sum_i max(z_i - tau, 0) - 1) / |{i : z_i > tau}|,
// until the support {z > tau} stops changing, which is the optimality condition: tau is then the exact
// threshold, and the weights are max(z - tau, 0). Each row stops as soon as it is exact.
//
// Speed comes from one data layout idea. All arithmetic runs on "columns": vectors of as many scores as
// fill 64 bytes (16 floats, 8 doubles), written with the GCC/Clang vector extension so that every
// operation is one SIMD instruction.
//   * Short rows (n <= SHORT_ROW): a block of 16 rows is transposed so that lane b of column i holds
//     score i of row b. Each lane is then an independent problem: sums over a row are sums down the
//     columns, lane by lane, with no horizontal (across-lane) sums, and the 16 rows step together.
//   * Long rows: the row itself is cut into columns (the last one padded with -inf). Each lane holds a
//     partial sum; after each pass the lanes are added up and the total is given back to every lane.
// Either way the per-lane code of project() is the same. The backward pass needs only one sum across
// lanes per row, so it reads every row in place, in columns of consecutive scores.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

template <typename T>
struct Column {
    typedef T type __attribute__((vector_size(64)));
    static constexpr int lanes = 64 / sizeof(T);
};

template <typename T>
using Vec = typename Column<T>::type;

constexpr int64_t SHORT_ROW = 64;           // rows up to this length go one per lane (measured best)
constexpr int64_t PARALLEL_MIN = 1 << 15;  // fewer scores than this: one thread (starting more costs more)

// In long-row mode the lanes hold partial results of one row: combine them into every lane.
template <typename T>
static Vec<T> all_lanes_sum(Vec<T> partial) {
    T total = 0;
    for (int b = 0; b < Column<T>::lanes; ++b) total += partial[b];
    return Vec<T>{} + total;
}

template <typename T>
static Vec<T> all_lanes_max(Vec<T> partial) {
    T best = partial[0];
    for (int b = 1; b < Column<T>::lanes; ++b) best = partial[b] > best ? partial[b] : best;
    return Vec<T>{} + best;
}

// Replaces columns[0..count) by the sparsemax weights of their lanes' rows; returns a lane mask of rows
// that contain NaN or +inf (their weights are meaningless; the caller raises an error).
template <typename T, bool ROWS_IN_LANES>
static Vec<T> project(Vec<T>* columns, int64_t count) {
    using V = Vec<T>;
    const V zero = V{}, one = zero + 1, infinity = zero + INFINITY;
    V row_max = -infinity, invalid = zero;
    for (int64_t i = 0; i < count; ++i) {
        row_max = columns[i] > row_max ? columns[i] : row_max;
        invalid = columns[i] < infinity ? invalid : one;  // NaN fails every comparison
    }
    if (!ROWS_IN_LANES) {
        row_max = all_lanes_max<T>(row_max);
        invalid = all_lanes_max<T>(invalid);
    }
    const V shift = row_max == -infinity ? zero : row_max;  // an all -inf row stays -inf: weights 0
    V tau = zero - 1, previous_size = zero - 1;
    for (;;) {
        V excess = zero, size = zero;
        for (int64_t i = 0; i < count; ++i) {
            const V above = columns[i] - shift - tau;
            excess += above > 0 ? above : zero;
            size += above > 0 ? one : zero;
        }
        if (!ROWS_IN_LANES) {
            excess = all_lanes_sum<T>(excess);
            size = all_lanes_sum<T>(size);
        }
        const auto settled = size == previous_size;  // same support as the step before: tau is exact
        bool all_settled = true;
        for (int b = 0; b < Column<T>::lanes; ++b) all_settled = all_settled && settled[b];
        if (all_settled) break;
        const V step = (excess - 1) / size;  // > 0 until rounding; an empty (all -inf) row gives -inf
        tau = (settled | ~(step > 0)) ? tau : tau + step;
        previous_size = size;
    }
    for (int64_t i = 0; i < count; ++i) {
        const V above = columns[i] - shift - tau;
        columns[i] = above > 0 ? above : zero;
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

// The sparsemax Jacobian-vector product s * (g - mean of g over the support s) for one row. It needs one
// sum across lanes per row, and rows are independent, so it reads the rows in place, with no transposing.
template <typename T>
static void backward_row(const T* weights, const T* grad_output, T* grad, int64_t n) {
    using V = Vec<T>;
    const V zero = V{}, one = zero + 1;
    V total = zero, size = zero;
    for_each_chunk<T>(n, [&](int64_t i, int64_t count) {
        const auto in_support = load_chunk(weights + i, count) > 0;
        total += in_support ? load_chunk(grad_output + i, count) : zero;
        size += in_support ? one : zero;
    });
    const V support_size = all_lanes_sum<T>(size);
    const V mean = support_size > 0 ? all_lanes_sum<T>(total) / support_size : zero;
    for_each_chunk<T>(n, [&](int64_t i, int64_t count) {
        const auto in_support = load_chunk(weights + i, count) > 0;
        const V chunk = in_support ? load_chunk(grad_output + i, count) - mean : zero;
        std::memcpy(grad + i, &chunk, count * sizeof(T));
    });
}

// Short rows: the first `block` rows of a (rows, n) matrix, row b into lane b of columns[i]; lanes past
// the last row repeat it (they are computed and never written back).
template <typename T>
static void load_block(const T* matrix, int64_t block, int64_t n, Vec<T>* columns) {
    for (int b = 0; b < Column<T>::lanes; ++b) {
        const T* row = matrix + std::min<int64_t>(b, block - 1) * n;
        for (int64_t i = 0; i < n; ++i) columns[i][b] = row[i];
    }
}

template <typename T>
static void store_block(const Vec<T>* columns, int64_t block, int64_t n, T* matrix) {
    for (int64_t b = 0; b < block; ++b)
        for (int64_t i = 0; i < n; ++i) matrix[b * n + i] = columns[i][b];
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

// Both passes split the rows over `threads` OpenMP threads; in the forward pass each has its own buffer.
template <typename T>
static int64_t forward(const T* scores, T* weights, int64_t rows, int64_t n, int threads) {
    using V = Vec<T>;
    constexpr int LANES = Column<T>::lanes;
    int64_t invalid_rows = 0;
    if (n <= SHORT_ROW) {
        const int64_t blocks = (rows + LANES - 1) / LANES;
#pragma omp parallel num_threads(rows * n >= PARALLEL_MIN ? threads : 1) reduction(+ : invalid_rows)
        {
            std::vector<V> columns(n);
#pragma omp for schedule(static)
            for (int64_t k = 0; k < blocks; ++k) {
                const int64_t block = std::min<int64_t>(LANES, rows - k * LANES);
                load_block(scores + k * LANES * n, block, n, columns.data());
                const V invalid = project<T, true>(columns.data(), n);
                for (int b = 0; b < block; ++b) invalid_rows += invalid[b] != 0;
                store_block(columns.data(), block, n, weights + k * LANES * n);
            }
        }
    } else {
        const int64_t count = (n + LANES - 1) / LANES;
#pragma omp parallel num_threads(rows * n >= PARALLEL_MIN ? threads : 1) reduction(+ : invalid_rows)
        {
            std::vector<V> columns(count);
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r) {
                load_row(scores + r * n, n, columns.data());
                invalid_rows += project<T, false>(columns.data(), count)[0] != 0;
                store_row(columns.data(), n, weights + r * n);
            }
        }
    }
    return invalid_rows;
}

template <typename T>
static void backward(const T* weights, const T* grad_output, T* grad, int64_t rows, int64_t n, int threads) {
#pragma omp parallel for num_threads(rows * n >= PARALLEL_MIN ? threads : 1) schedule(static)
    for (int64_t r = 0; r < rows; ++r) backward_row(weights + r * n, grad_output + r * n, grad + r * n, n);
}

// The C entry points fused.py calls: forward returns the number of rows with NaN or +inf scores.
extern "C" {
int64_t sparsemax_forward_float(const float* scores, float* weights, int64_t rows, int64_t n, int threads) {
    return forward(scores, weights, rows, n, threads);
}
int64_t sparsemax_forward_double(const double* scores, double* weights, int64_t rows, int64_t n, int threads) {
    return forward(scores, weights, rows, n, threads);
}
void sparsemax_backward_float(const float* weights, const float* grad_output, float* grad, int64_t rows,
                              int64_t n, int threads) {
    backward(weights, grad_output, grad, rows, n, threads);
}
void sparsemax_backward_double(const double* weights, const double* grad_output, double* grad, int64_t rows,
                               int64_t n, int threads) {
    backward(weights, grad_output, grad, rows, n, threads);
}
}
