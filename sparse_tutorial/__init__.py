"""sparse_tutorial: the companion library of the executable book on sparse attention."""
from sparse_tutorial.profiles import default_device, profile, seed_everything
from sparse_tutorial.projections import (
    PROJECTIONS,
    AlphaEntmax,
    Entmax15,
    EntmaxBisect,
    GumbelSoftmax,
    Softmax,
    SoftmaxWithTemperature,
    SparsegenLin,
    Sparsemax,
    alpha_entmax,
    entmax15,
    entmax_bisect,
    get_projection,
    gumbel_softmax,
    softmax,
    softmax_with_temperature,
    sparsegen_lin,
    sparsemax,
)
from sparse_tutorial.losses import (
    Entmax15Loss,
    EntmaxBisectLoss,
    SparsemaxLoss,
    binary_sparsemax_loss,
    entmax15_loss,
    entmax_bisect_loss,
    modified_huber_loss,
    multilabel_target,
    sparsemax_loss,
)
from sparse_tutorial.regularizers import (
    PENALTIES,
    entropy,
    entropy_penalty,
    l1_norm,
    l1_penalty,
    linf_norm,
    linf_penalty,
)
from sparse_tutorial.scores import (
    SCORES,
    AdditiveScore,
    CosineScore,
    CoverageAdditiveScore,
    DotScore,
    GeneralScore,
    LocationScore,
    LocationSensitiveScore,
    ScaledDotScore,
    get_score,
)
from sparse_tutorial.attention import (
    Attention,
    ContextAttention,
    HierarchicalAttention,
    LocalPAttention,
    MultiHeadAttention,
    PointerAttention,
    scaled_dot_product_attention,
)
from sparse_tutorial.coverage import (
    FertilityCoverage,
    NeuralCoverage,
    accumulate_coverage,
    coverage_loss,
    update_coverage,
)

__version__ = "0.4.0"
