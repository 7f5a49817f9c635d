"""The framework layer classes the analyzer knows, each with how it was checked: the evidence beside the data.

`frameworks.py` derives its allowlists from this table. An entry is `known` (capturable: no host sync, no
data-dependent shape, no host control flow on tensor values and no per-call Python state in its forward and what
that calls, and a graph-safe random stream where it draws one), a `container`, a `base`, or `off`: checked and left
off the allowlist, with the reason. An `off` entry whose note names a definite capture hazard (read in the source)
says which rule's hazard it is (`hazard`, and the argument a call must pass for it to hold, `when`): a parent calling it
is then `ineligible` by that rule; one merely not checked keeps its parent `unknown`. Evidence is `source` (its forward,
the functions it calls and the kernels it ends in were read: paddlepaddle 3.3.1, torch 2.13, torchvision 0.29) or
`gpu` (wrapped in `CUDAGraphedLayer`, the path users run, and replayed against eager, forward and backward, by
`tests/analysis/test_framework_capture_gpu.py`). `tests/analysis/test_framework_lists.py` keeps table, frameworks
and source in step.
"""

from __future__ import annotations

from dataclasses import dataclass

KNOWN, CONTAINER, BASE, OFF = "known", "container", "base", "off"
SOURCE, GPU = "source", "gpu"


@dataclass(frozen=True)
class Layer:
    name: str  # where users import it from: "torch.nn.Linear", "paddle.incubate.nn.FusedLinear"
    role: str  # KNOWN, CONTAINER, BASE or OFF
    checked: str  # SOURCE or GPU
    note: str  # what was read or run: the ops it ends in, or why it is off
    stateless: bool = False  # no parameters or buffers: building one in forward costs a Python object
    caveat: str = ""  # constructor or call arguments under which it is not capturable, and why
    waives: tuple[str, ...] = ()  # "CODE text": findings in its own source that the note explains away
    hazard: str = ""  # OFF only: the rule (code) whose hazard its note names as definite; "": not checked
    when: tuple[str, int] | tuple[()] = ()  # the argument (keyword, position) a call passes for `hazard` to hold

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def _rows(
    role: str, checked: str, prefix: str, rows: str, note: str, stateless: bool = False, caveat: str = "",
    waives: tuple[str, ...] = (), hazard: str = "", when: tuple[str, int] | tuple[()] = (),
) -> list[Layer]:
    """Many classes with one note: `rows` is a space-separated list of names under `prefix`."""
    return [Layer(f"{prefix}.{name}", role, checked, note, stateless, caveat, waives, hazard, when) for name in rows.split()]


# ----- PyTorch: every entry below is captured and replayed by the GPU test; the notes say what its forward runs ----
_T = "torch.nn"
_PAD_DIMS = [f"{kind}{n}d" for kind in ("ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad") for n in "123"]
TORCH: list[Layer] = [
    *_rows(KNOWN, GPU, _T, "CELU ELU GELU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid Mish ReLU ReLU6 "
           "SELU SiLU Sigmoid Softplus Softshrink Softsign Tanh Tanhshrink Threshold", "one elementwise kernel", True),
    *_rows(KNOWN, GPU, _T, "Softmax Softmax2d Softmin LogSoftmax", "softmax kernels", True),
    Layer(f"{_T}.GLU", KNOWN, GPU, "glu kernel", True),
    Layer(f"{_T}.PReLU", KNOWN, GPU, "prelu kernel with its weight"),
    Layer(f"{_T}.RReLU", KNOWN, GPU, "rrelu_with_noise: draws from the philox generator in training", True),
    *_rows(KNOWN, GPU, _T, "Identity Flatten Unflatten", "returns its input or a view", True),
    *_rows(KNOWN, GPU, "torch.ao.quantization", "QuantStub DeQuantStub", "returns its input (until `convert` swaps it for a "
           "quantized module, which runs on the host's quantized kernels)", True),
    *_rows(KNOWN, GPU, _T, "Linear Bilinear", "addmm / bilinear"),
    Layer("torch.nn.modules.linear.NonDynamicallyQuantizableLinear", KNOWN, GPU, "Linear without its own forward"),
    *_rows(KNOWN, GPU, _T, "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d", "cuDNN convolutions"),
    *[
        Layer(f"{_T}.{name}", KNOWN, GPU, "batch_norm; running statistics updated in place on the device",
              caveat="momentum=None: the cumulative average divides by `float(num_batches_tracked)`, a host sync")
        for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")
    ],
    Layer(f"{_T}.SyncBatchNorm", KNOWN, GPU, "batch_norm without a process group; with one, the all-gather path skips "
          "its mask indexing while the stream is capturing (torch/nn/modules/_functions.py)",
          caveat="momentum=None: the cumulative average reads `num_batches_tracked.item()`"),
    *_rows(KNOWN, GPU, _T, "GroupNorm LayerNorm RMSNorm", "normalization kernels"),
    *_rows(KNOWN, GPU, _T, "InstanceNorm1d InstanceNorm2d InstanceNorm3d", "instance_norm (batch_norm on a reshape)"),
    *_rows(KNOWN, GPU, _T, "LocalResponseNorm CrossMapLRN2d", "pooling and elementwise ops", True),
    *_rows(KNOWN, GPU, _T, "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
           "fused dropout / bernoulli_ on the philox generator: a fresh mask on every replay", True),
    *_rows(KNOWN, GPU, _T, "Embedding EmbeddingBag", "embedding / _embedding_bag; with max_norm, embedding_renorm_ "
           "counts the unique indices on the device (cub::unique, aten/src/ATen/native/cuda/Embedding.cu)"),
    *_rows(KNOWN, GPU, _T, " ".join(_PAD_DIMS), "pad kernels", True),
    *_rows(KNOWN, GPU, _T, " ".join(f"{k}{n}d" for k in ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool", "LPPool")
                                    for n in "123"), "pooling kernels", True),
    *_rows(KNOWN, GPU, _T, "FractionalMaxPool2d FractionalMaxPool3d", "samples drawn with torch.rand on the device", True),
    *_rows(KNOWN, GPU, _T, "MaxUnpool1d MaxUnpool2d MaxUnpool3d", "max_unpool scatter from the given indices", True),
    *_rows(KNOWN, GPU, _T, "Upsample UpsamplingNearest2d UpsamplingBilinear2d", "interpolate kernels", True),
    *_rows(KNOWN, GPU, _T, "PixelShuffle PixelUnshuffle ChannelShuffle Fold Unfold", "reshapes and im2col", True),
    *_rows(KNOWN, GPU, _T, "CosineSimilarity PairwiseDistance", "reductions", True),
    Layer(f"{_T}.MultiheadAttention", KNOWN, GPU, "multi_head_attention_forward; _native_multi_head_attention in "
          "inference"),
    Layer(f"{_T}.TransformerEncoderLayer", KNOWN, GPU, "attention, linear, norm and dropout; the fused "
          "_transformer_encoder_layer_fwd in inference", caveat="activation: a callable given here runs in forward"),
    Layer(f"{_T}.TransformerDecoderLayer", KNOWN, GPU, "attention, linear, norm and dropout",
          caveat="activation: a callable given here runs in forward"),
    Layer(f"{_T}.TransformerEncoder", KNOWN, GPU, "runs copies of its encoder_layer",
          caveat="encoder_layer: the layer given is run; src_key_padding_mask in inference: converted to a nested "
          "tensor, whose sizes are read on the host"),
    Layer(f"{_T}.TransformerDecoder", KNOWN, GPU, "runs copies of its decoder_layer",
          caveat="decoder_layer: the layer given is run"),
    Layer(f"{_T}.Transformer", KNOWN, GPU, "TransformerEncoder and TransformerDecoder",
          caveat="custom_encoder, custom_decoder: the layers given are run"),
    *_rows(KNOWN, GPU, _T, "RNN LSTM GRU", "cuDNN RNN; its dropout state is graph-aware (PyTorch pull request 56433)"),
    *_rows(KNOWN, GPU, _T, "RNNCell LSTMCell GRUCell", "rnn_tanh_cell / lstm_cell / gru_cell"),
    *_rows(KNOWN, GPU, _T, "L1Loss MSELoss BCELoss BCEWithLogitsLoss CrossEntropyLoss NLLLoss NLLLoss2d KLDivLoss "
           "SmoothL1Loss HuberLoss PoissonNLLLoss MarginRankingLoss HingeEmbeddingLoss MultiLabelMarginLoss "
           "MultiLabelSoftMarginLoss MultiMarginLoss SoftMarginLoss CosineEmbeddingLoss TripletMarginLoss "
           "TripletMarginWithDistanceLoss", "loss kernels; ignore_index and weights are handled on the device", True),
    *_rows(CONTAINER, GPU, _T, "Sequential", "calls its items in order"),
    *_rows(CONTAINER, SOURCE, _T, "ModuleList ModuleDict ParameterList ParameterDict", "holds layers or parameters; "
           "not callable (torch/nn/modules/container.py)"),
    *_rows(BASE, SOURCE, _T, "Module modules.Module modules.module.Module", "the layer base class"),
    Layer(f"{_T}.AdaptiveLogSoftmaxWithLoss", OFF, SOURCE, "forward calls `.nonzero()`, indexes with a boolean mask and "
          "reads `.item()` (torch/nn/modules/adaptive.py)"),
    Layer(f"{_T}.CTCLoss", OFF, SOURCE, "ctc_loss copies input_lengths and target_lengths to the CPU "
          "(aten/src/ATen/native/LossCTC.cpp)", True),
    Layer(f"{_T}.GaussianNLLLoss", OFF, SOURCE, "gaussian_nll_loss branches on `torch.any(var < 0)`, a host sync", True),
    Layer(f"{_T}.LinearCrossEntropyLoss", OFF, SOURCE, "new in torch 2.13; the GPU run has 2.11: not captured yet"),
    *_rows(OFF, SOURCE, _T, "LazyLinear LazyConv1d LazyConv2d LazyConv3d LazyConvTranspose1d "
           "LazyConvTranspose2d LazyConvTranspose3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d LazyInstanceNorm1d "
           "LazyInstanceNorm2d LazyInstanceNorm3d", "its parameters are created by the first forward call, which then "
           "changes its class: not checked with the runtime's warm-up"),
    Layer(f"{_T}.DataParallel", OFF, SOURCE, "scatters inputs and replicates the module over devices on every call"),
    Layer(f"{_T}.Container", OFF, SOURCE, "deprecated; no forward"),
    *_rows(OFF, SOURCE, _T, "RNNBase RNNCellBase", "bases of the RNN layers; their subclasses are listed"),
]

# ----- torchvision.ops: layers that do not depend on timm; captured by the GPU test -----------------------------------
_TV = "torchvision.ops"
TORCHVISION: list[Layer] = [
    Layer(f"{_TV}.StochasticDepth", KNOWN, GPU, "bernoulli_ on the philox generator, then a multiply", True),
    *_rows(KNOWN, GPU, _TV, "DropBlock2d DropBlock3d", "bernoulli_, max_pool and a normalizing sum on the device", True),
    Layer(f"{_TV}.FrozenBatchNorm2d", KNOWN, GPU, "elementwise arithmetic on its buffers"),
    Layer(f"{_TV}.Permute", KNOWN, GPU, "torch.permute", True),
    Layer(f"{_TV}.SqueezeExcitation", KNOWN, GPU, "pool, two 1x1 convolutions, activations",
          caveat="activation, scale_activation: the classes given are built and run"),
    *[
        Layer(f"{_TV}.{name}", KNOWN, GPU, "a Sequential of convolution, norm and activation",
              caveat="norm_layer, activation_layer: the classes given are built and run")
        for name in ("Conv2dNormActivation", "Conv3dNormActivation")
    ],
    Layer(f"{_TV}.MLP", KNOWN, GPU, "a Sequential of Linear, norm, activation and Dropout",
          caveat="norm_layer, activation_layer: the classes given are built and run"),
    Layer(f"{_TV}.DeformConv2d", OFF, GPU, "torchvision::deform_conv2d: its capture did not match eager on the H200"),
    *_rows(KNOWN, GPU, _TV, "RoIAlign RoIPool", "roi kernels over a rois tensor (K, 5)", True),
    Layer(f"{_TV}.PSRoIPool", KNOWN, GPU, "position-sensitive roi max pooling over a rois tensor (K, 5)", True),
    Layer(f"{_TV}.PSRoIAlign", OFF, GPU, "position-sensitive roi align: its replay did not match eager on the H200 "
          "in training", True),
    Layer(f"{_TV}.MultiScaleRoIAlign", OFF, SOURCE, "assigns boxes to levels with `torch.where(levels == level)[0]`, a "
          "data-dependent size (torchvision/ops/poolers.py)"),
    Layer(f"{_TV}.FeaturePyramidNetwork", OFF, SOURCE, "takes a dict of feature maps and runs the extra_blocks it is "
          "given: not captured yet"),
    Layer(f"{_TV}.ConvNormActivation", OFF, SOURCE, "base of Conv2dNormActivation and Conv3dNormActivation"),
]

# ----- Paddle: read in paddlepaddle 3.3.1 (forward, the functional it calls in dynamic mode, the kernel) ------------
# No Paddle GPU run here: the PyPI paddlepaddle-gpu wheel has no sm_90 kernels. Random ops matter most: only the plain
# dropout kernel and fused_dropout_add re-seed on every replay (PD_RECORD_CUDA_GRAPH_RANDOM_KERNEL); uniform, bernoulli,
# rrelu, dropout_nd and the fused transformer kernels take their seed and offset on the host at launch
# (funcs::distribution_and_transform, GetSeedDataAndIncrement), so a replay repeats the captured draw.
_P = "paddle.nn"
_FROZEN_RNG = "draws with a seed and offset fixed on the host at launch: every replay repeats the captured mask"
_PADDLE_ACTIVATIONS = (
    "CELU ELU GELU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid Mish ReLU ReLU6 SELU Silu SiLU "
    "Sigmoid Softplus Softshrink Softsign Swish Tanh Tanhshrink ThresholdedReLU"
)
_PADDLE_POOLS = " ".join(
    f"{kind}{n}{d}" for kind in ("MaxPool", "AvgPool") for n in "123" for d in "D"
) + " " + " ".join(f"{kind}{n}{d}" for kind in ("AdaptiveAvgPool", "AdaptiveMaxPool") for n in "123" for d in "Dd")
_PADDLE_PADS = " ".join(
    f"{kind}{n}{d}" for kind in ("ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad") for n in "123"
    for d in "Dd"
)
_SAME_CLASS = "the same class as its alias; "
PADDLE: list[Layer] = [
    *_rows(KNOWN, SOURCE, _P, _PADDLE_ACTIVATIONS, "one _C_ops activation kernel", True),
    *_rows(KNOWN, SOURCE, _P, "Softmax Softmax2D LogSoftmax", "cast and softmax / log_softmax", True),
    Layer(f"{_P}.GLU", KNOWN, SOURCE, "split and multiply", True),
    Layer(f"{_P}.Maxout", KNOWN, SOURCE, "maxout kernel", True),
    Layer(f"{_P}.PReLU", KNOWN, SOURCE, "prelu kernel with its weight"),
    Layer(f"{_P}.RReLU", OFF, SOURCE, "training: rrelu kernel " + _FROZEN_RNG, True),
    *_rows(KNOWN, SOURCE, _P, "Identity Flatten Unflatten", "returns its input or a reshape", True),
    *_rows(KNOWN, SOURCE, _P, "Linear Bilinear", "linear (matmul + add) / bilinear"),
    *_rows(KNOWN, SOURCE, _P, "Conv1D Conv2D Conv3D Conv1d Conv2d Conv3d Conv1DTranspose Conv2DTranspose "
           "Conv3DTranspose", "conv / depthwise_conv kernels (pad3d first for non-zero padding modes)"),
    Layer(f"{_P}.BatchNorm", KNOWN, SOURCE, "batch_norm_ with the running statistics updated in place"),
    *_rows(KNOWN, SOURCE, _P, "BatchNorm1D BatchNorm2D BatchNorm3D", "batch_norm_ with the running statistics updated in "
           "place; forward re-sets `_data_format` from the same constructor value on every call",
           waives=("AG401 `self._data_format`",)),
    Layer(f"{_P}.SyncBatchNorm", KNOWN, SOURCE, "sync_batch_norm_: the statistics are all-reduced by NCCL inside the "
          "kernel, on the device; forward re-sets `_data_format` from the same constructor value on every call, "
          "where its test of that attribute holds (a refresh: `analysis/refresh.py`)"),
    *_rows(KNOWN, SOURCE, _P, "GroupNorm LayerNorm", "group_norm / layer_norm kernels"),
    *_rows(KNOWN, SOURCE, _P, "InstanceNorm1D InstanceNorm2D InstanceNorm3D", "instance_norm kernel"),
    Layer(f"{_P}.LocalResponseNorm", KNOWN, SOURCE, "pad, pool and elementwise ops", True),
    Layer(f"{_P}.SpectralNorm", KNOWN, SOURCE, "spectral_norm kernel: power iterations on its u and v on the device"),
    Layer(f"{_P}.Dropout", KNOWN, SOURCE, "dropout kernel, re-seeded on every replay", True,
          caveat="axis: given, the mask comes from paddle.uniform, which " + _FROZEN_RNG),
    *_rows(OFF, SOURCE, _P, "Dropout2D Dropout3D AlphaDropout FeatureAlphaDropout",
           "training: its mask comes from paddle.uniform, which " + _FROZEN_RNG, True, hazard="AG404"),
    Layer(f"{_P}.Embedding", KNOWN, SOURCE, "embedding kernel",
          caveat="max_norm: embedding_renorm_ calls paddle.unique, a data-dependent size; sparse=True: selected-rows "
          "gradients"),
    *_rows(KNOWN, SOURCE, _P, "Pad1D Pad2D Pad3D " + _PADDLE_PADS, "pad3d kernel", True,
           caveat="padding: a tensor is read with `.tolist()` on every call"),
    *_rows(KNOWN, SOURCE, _P, _PADDLE_POOLS, "pool2d / pool3d / max_pool_with_index kernels", True),
    *_rows(KNOWN, SOURCE, _P, "LPPool1D LPPool2D LPPool1d LPPool2d", "lp_pool2d kernel", True),
    *_rows(KNOWN, SOURCE, _P, "MaxUnPool1D MaxUnPool2D MaxUnPool3D MaxUnpool1d MaxUnpool2d MaxUnpool3d",
           "unpool / unpool3d scatter from the given indices", True),
    *_rows(OFF, SOURCE, _P, "FractionalMaxPool2D FractionalMaxPool3D", "without random_u the kernel draws its own; "
           "not checked for a graph-safe seed", True),
    Layer(f"{_P}.Upsample", KNOWN, SOURCE, "interpolate kernels; forward sets `data_format` once from the input rank "
          "when it was None (a refresh: `analysis/refresh.py`)", True),
    *_rows(KNOWN, SOURCE, _P, "UpsamplingNearest2D UpsamplingBilinear2D UpsamplingNearest2d UpsamplingBilinear2d",
           "interpolate kernels", True),
    *_rows(KNOWN, SOURCE, _P, "PixelShuffle PixelUnshuffle ChannelShuffle Fold Unfold", "reshape and im2col kernels",
           True),
    Layer(f"{_P}.CosineSimilarity", KNOWN, SOURCE, "elementwise ops and sums", True),
    Layer(f"{_P}.PairwiseDistance", OFF, SOURCE, "pairwise_distance uploads `paddle.to_tensor([epsilon])` from the host "
          "on every call (nn/functional/distance.py)", True),
    Layer(f"{_P}.MultiHeadAttention", KNOWN, SOURCE, "linear, matmul, softmax and dropout (re-seeded)",
          caveat="cache: incremental-decoding caches are Python objects built per call"),
    *_rows(KNOWN, SOURCE, _P, "TransformerEncoderLayer TransformerDecoderLayer", "MultiHeadAttention, linear, "
           "LayerNorm, dropout (re-seeded) and a paddle.nn.functional activation"),
    Layer(f"{_P}.TransformerEncoder", KNOWN, SOURCE, "runs copies of its encoder_layer and an optional norm",
          caveat="encoder_layer: the layer given is run"),
    Layer(f"{_P}.TransformerDecoder", KNOWN, SOURCE, "runs copies of its decoder_layer and an optional norm",
          caveat="decoder_layer: the layer given is run"),
    Layer(f"{_P}.Transformer", KNOWN, SOURCE, "TransformerEncoder and TransformerDecoder",
          caveat="custom_encoder, custom_decoder: the layers given are run"),
    *_rows(KNOWN, SOURCE, _P, "SimpleRNNCell LSTMCell GRUCell", "matmul, split and activations; initial states are "
           "paddle.full from the batch size (where that size is unknown, `.item()` of `paddle.shape`, a tensor in host "
           "memory)"),
    *_rows(OFF, SOURCE, _P, "SimpleRNN LSTM GRU", "the rnn kernel builds its cuDNN descriptors from sequence_length "
           "as a host `std::vector<int>` (phi/kernels/gpu/rnn_functor.h): a tensor passed is copied to the host on "
           "every call; without it, not checked (descriptors and dropout state are set up per call)",
           hazard="AG104", when=("sequence_length", 2)),
    *_rows(OFF, SOURCE, _P, "RNN BiRNN", "runs the cell it is given step by step through Python structure helpers "
           "(nn/layer/rnn.py _rnn_dynamic_graph): not checked"),
    *_rows(OFF, SOURCE, _P, "RNNCellBase", "base of the cells; they are listed"),
    *_rows(KNOWN, SOURCE, _P, "BCELoss BCEWithLogitsLoss CrossEntropyLoss NLLLoss KLDivLoss L1Loss MSELoss SmoothL1Loss "
           "HuberLoss HingeEmbeddingLoss MultiLabelSoftMarginLoss MultiMarginLoss PoissonNLLLoss SoftMarginLoss "
           "CosineEmbeddingLoss TripletMarginLoss TripletMarginWithDistanceLoss", "loss kernels and elementwise ops; "
           "ignore_index and weights are applied on the device", True),
    Layer(f"{_P}.MarginRankingLoss", OFF, SOURCE, "margin_ranking_loss uploads `paddle.to_tensor([margin])` on every "
          "call (nn/functional/loss.py)", True),
    Layer(f"{_P}.MultiLabelMarginLoss", OFF, SOURCE, "multi_label_margin_loss reads `paddle.min(label).item()` and "
          "`paddle.max(label).item()`", True),
    Layer(f"{_P}.GaussianNLLLoss", OFF, SOURCE, "gaussian_nll_loss branches on `paddle.any(variance < 0)`", True),
    Layer(f"{_P}.AdaptiveLogSoftmaxWithLoss", OFF, SOURCE, "adaptive_log_softmax_with_loss calls `.nonzero()`, "
          "`masked_select` and indexes with a boolean mask"),
    *_rows(OFF, SOURCE, _P, "CTCLoss RNNTLoss", "warpctc / warprnnt take the sequence lengths as tensors: not checked",
           True),
    Layer(f"{_P}.HSigmoidLoss", OFF, SOURCE, "hsigmoid_loss with custom trees: not checked"),
    *_rows(CONTAINER, SOURCE, _P, "Sequential", "calls its items in order"),
    *_rows(CONTAINER, SOURCE, _P, "LayerList LayerDict ParameterList ParameterDict ModuleList ModuleDict",
           "holds layers or parameters; not callable (nn/layer/container.py)"),
    *_rows(BASE, SOURCE, _P, "Layer layer.layers.Layer Module", "the layer base class"),
]

_PI = "paddle.incubate.nn"
_FUSED_DROPOUT = ("training with dropout > 0 (the default): FusedDropoutHelper (its seed attributes) " + _FROZEN_RNG
                  + " (phi/kernels/fusion/gpu/fused_dropout_helper.h, funcs/dropout_impl_util.h)")
PADDLE_INCUBATE: list[Layer] = [
    Layer(f"{_PI}.FusedLinear", KNOWN, SOURCE, "fused_gemm_epilogue (cuBLASLt matmul with bias)"),
    Layer(f"{_PI}.FusedDropoutAdd", KNOWN, SOURCE, "fused_dropout_add: the forward kernel re-seeds on every replay "
          "(PD_RECORD_CUDA_GRAPH_RANDOM_KERNEL) and its grad kernel reads the seed through CUDAGraphNodeLauncher",
          True),
    Layer(f"{_PI}.FusedDropout", KNOWN, SOURCE, "paddle.nn.functional.dropout, re-seeded on every replay", True,
          caveat="axis: given, the dropout_nd kernel " + _FROZEN_RNG),
    *_rows(OFF, SOURCE, _PI, "FusedMultiHeadAttention FusedFeedForward FusedBiasDropoutResidualLayerNorm "
           "FusedTransformerEncoderLayer", _FUSED_DROPOUT, hazard="AG404"),
    Layer(f"{_PI}.FusedMultiTransformer", OFF, SOURCE, "an inference decoding op with caches and a host time_step: not "
          "checked"),
]

_PV = "paddle.vision.ops"
PADDLE_VISION: list[Layer] = [
    Layer(f"{_PV}.ConvNormActivation", KNOWN, SOURCE, "a Sequential of Conv2D, norm and activation",
          caveat="norm_layer, activation_layer: the classes given are built and run"),
    Layer(f"{_PV}.RoIAlign", OFF, SOURCE, "roi_align copies boxes_num to the host (phi/kernels/gpu/roi_align_kernel.cu)",
          True),
    *_rows(OFF, SOURCE, _PV, "RoIPool PSRoIPool", "kernels not checked", True),
    Layer(f"{_PV}.DeformConv2D", OFF, SOURCE, "kernel not checked"),
]

_PF = "paddle.distributed.fleet.meta_parallel"
PADDLE_FLEET: list[Layer] = _rows(
    OFF, SOURCE, _PF, "ColumnParallelLinear RowParallelLinear VocabParallelEmbedding ParallelCrossEntropy",
    "one card: linear / embedding; tensor parallel: c_identity, all-reduce and concat collectives whose capture was "
    "not checked (no Paddle GPU run)",
)

LAYERS: tuple[Layer, ...] = (*TORCH, *TORCHVISION, *PADDLE, *PADDLE_INCUBATE, *PADDLE_VISION, *PADDLE_FLEET)
