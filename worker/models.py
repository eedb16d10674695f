"""The end-to-end models of opmeter's built-in pipelines, as PyTorch modules written here from
the architectures' papers and torchvision's published layouts (no torchvision or transformers
import: the machine measuring may lack them). Each has the same parameters, in the same places,
as the published model, so parameter counts match the published ones; weights are random.

    build(name, image=224, num_classes=1000) -> nn.Module (eval mode, fp32, on the CPU)
    init_random(model, seed)                 -> fills every parameter and BatchNorm buffer

Vision models take N x 3 x image x image and return N x 1000 logits. OPT-66B is one decoder
layer (the model does not fit one GPU): prefill takes N x seq x 9216 hidden states and returns
the same shape; decode takes N x 1 x 9216 and attends over a KV cache it holds as a buffer.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VISION = ("resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "replknet_31b", "vit_b_16")
OPT = ("opt_66b_prefill", "opt_66b_decode")
NAMES = VISION + OPT

# OPT-66B (Zhang et al. 2022, Table 1; the HF config): hidden 9216, 72 heads, ffn 4 x hidden.
OPT_66B = {"hidden": 9216, "heads": 72, "ffn": 36864}


def make_divisible(v, divisor=8):
    """torchvision's channel rounding: to a multiple of `divisor`, never down by more than 10%."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class ConvBN(nn.Sequential):
    """Conv (no bias) + BatchNorm + optional activation: the unit every CNN here is built of."""

    def __init__(self, cin, cout, kernel, stride=1, groups=1, act=None, eps=1e-5, padding=None):
        layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2 if padding is None else padding, groups=groups,
                            bias=False),
                  nn.BatchNorm2d(cout, eps=eps)]
        if act is not None:
            layers.append(act())
        super().__init__(*layers)


# --- ResNet (He et al. 2015), torchvision v1.5: the stride of a bottleneck sits on its 3x3 ---

class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = _downsample(cin, planes, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = _downsample(cin, planes * 4, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


def _downsample(cin, cout, stride):
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], 64
        for i, (planes, blocks) in enumerate(zip((64, 128, 256, 512), layers)):
            stage = []
            for j in range(blocks):
                stage.append(block(cin, planes, 2 if i > 0 and j == 0 else 1))
                cin = planes * block.expansion
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --- squeeze-excite, inverted residuals: MobileNetV3 (Howard et al. 2019), EfficientNet (Tan & Le 2019) ---

class SqueezeExcite(nn.Module):
    """x * gate(fc2(act(fc1(mean_hw(x))))), the fcs 1x1 convs with bias (torchvision's form)."""

    def __init__(self, channels, reduced, act, gate):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, reduced, 1)
        self.fc2 = nn.Conv2d(reduced, channels, 1)
        self.act, self.gate = act, gate

    def forward(self, x):
        s = self.fc2(self.act(self.fc1(F.adaptive_avg_pool2d(x, 1))))
        return x * self.gate(s)


class InvertedResidual(nn.Module):
    """[1x1 expand] -> depthwise kxk -> [squeeze-excite] -> 1x1 project, residual when shapes
    allow (stochastic depth is the identity in eval)."""

    def __init__(self, cin, kernel, expanded, cout, stride, act, se_reduced, se_act, se_gate, eps):
        super().__init__()
        layers = []
        if expanded != cin:
            layers.append(ConvBN(cin, expanded, 1, act=act, eps=eps))
        layers.append(ConvBN(expanded, expanded, kernel, stride, groups=expanded, act=act, eps=eps))
        if se_reduced:
            layers.append(SqueezeExcite(expanded, se_reduced, se_act, se_gate))
        layers.append(ConvBN(expanded, cout, 1, eps=eps))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        out = self.block(x)
        return x + out if self.residual else out


# torchvision's mobilenet_v3_small: (in, kernel, expanded, out, se, hardswish, stride)
MOBILENET_V3_SMALL = [
    (16, 3, 16, 16, True, False, 2),
    (16, 3, 72, 24, False, False, 2),
    (24, 3, 88, 24, False, False, 1),
    (24, 5, 96, 40, True, True, 2),
    (40, 5, 240, 40, True, True, 1),
    (40, 5, 240, 40, True, True, 1),
    (40, 5, 120, 48, True, True, 1),
    (48, 5, 144, 48, True, True, 1),
    (48, 5, 288, 96, True, True, 2),
    (96, 5, 576, 96, True, True, 1),
    (96, 5, 576, 96, True, True, 1),
]


class MobileNetV3Small(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        eps = 1e-3  # torchvision's MobileNetV3 BatchNorm
        layers = [ConvBN(3, 16, 3, 2, act=nn.Hardswish, eps=eps)]
        for cin, k, exp, cout, se, hs, stride in MOBILENET_V3_SMALL:
            layers.append(InvertedResidual(cin, k, exp, cout, stride, nn.Hardswish if hs else nn.ReLU,
                                           make_divisible(exp // 4) if se else 0, F.relu, F.hardsigmoid, eps))
        layers.append(ConvBN(96, 576, 1, act=nn.Hardswish, eps=eps))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Linear(1024, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# EfficientNet-B0 stages: (expand ratio, kernel, stride, in, out, repeats)
EFFICIENTNET_B0 = [
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
]


class EfficientNetB0(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [ConvBN(3, 32, 3, 2, act=nn.SiLU)]
        for ratio, k, stride, cin, cout, repeats in EFFICIENTNET_B0:
            for i in range(repeats):
                c = cin if i == 0 else cout
                # torchvision: the squeeze is a quarter of the block's input channels, at least 1
                layers.append(InvertedResidual(c, k, make_divisible(c * ratio), cout, stride if i == 0 else 1,
                                               nn.SiLU, max(1, c // 4), F.silu, torch.sigmoid, 1e-5))
        layers.append(ConvBN(320, 1280, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# --- RepLKNet-31B (Ding et al. 2022), inference form: each large kernel (and its parallel 5x5)
# re-parameterized into one depthwise conv with bias; a BatchNorm before each block ---

class RepLKBlock(nn.Module):
    def __init__(self, c, kernel):
        super().__init__()
        self.prelkb_bn = nn.BatchNorm2d(c)
        self.pw1 = ConvBN(c, c, 1, act=nn.ReLU)
        self.large_kernel = nn.Conv2d(c, c, kernel, 1, kernel // 2, groups=c, bias=True)
        self.pw2 = ConvBN(c, c, 1)

    def forward(self, x):
        return x + self.pw2(F.relu(self.large_kernel(self.pw1(self.prelkb_bn(x)))))


class ConvFFN(nn.Module):
    def __init__(self, c, ratio=4):
        super().__init__()
        self.preffn_bn = nn.BatchNorm2d(c)
        self.pw1 = ConvBN(c, c * ratio, 1)
        self.pw2 = ConvBN(c * ratio, c, 1)

    def forward(self, x):
        return x + self.pw2(F.gelu(self.pw1(self.preffn_bn(x))))


class RepLKNet(nn.Module):
    def __init__(self, kernels=(31, 29, 27, 13), layers=(2, 2, 18, 2), channels=(128, 256, 512, 1024),
                 num_classes=1000):
        super().__init__()
        c0 = channels[0]
        self.stem = nn.Sequential(ConvBN(3, c0, 3, 2, act=nn.ReLU), ConvBN(c0, c0, 3, 1, groups=c0, act=nn.ReLU),
                                  ConvBN(c0, c0, 1, act=nn.ReLU), ConvBN(c0, c0, 3, 2, groups=c0, act=nn.ReLU))
        stages = []
        for i, (k, n, c) in enumerate(zip(kernels, layers, channels)):
            blocks = []
            for _ in range(n):
                blocks += [RepLKBlock(c, k), ConvFFN(c)]
            if i + 1 < len(channels):  # transition: 1x1 to the next width, then a stride-2 depthwise 3x3
                c1 = channels[i + 1]
                blocks += [ConvBN(c, c1, 1, act=nn.ReLU), ConvBN(c1, c1, 3, 2, groups=c1, act=nn.ReLU)]
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.norm = nn.BatchNorm2d(channels[-1])
        self.head = nn.Linear(channels[-1], num_classes)

    def forward(self, x):
        x = self.norm(self.stages(self.stem(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --- attention shared by ViT and OPT ---

def attend(q, k, v, causal_offset=None):
    """softmax(q k^T / sqrt(d)) v over the last two dims. With causal_offset = o, query i sees keys
    j <= i + o (o = keys before the first query: 0 for prefill, the cache length for decode)."""
    nq, nk = q.shape[-2], k.shape[-2]
    masked = causal_offset is not None and nk - 1 > causal_offset  # some key lies after query 0
    sdpa = getattr(F, "scaled_dot_product_attention", None)  # torch >= 2.0
    if sdpa is not None and not masked:
        return sdpa(q, k, v)
    if sdpa is not None and causal_offset == 0 and nq == nk:
        return sdpa(q, k, v, is_causal=True)
    s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if masked:
        i = torch.arange(nq, device=q.device).unsqueeze(1)
        j = torch.arange(nk, device=q.device).unsqueeze(0)
        s = s.masked_fill(j > i + causal_offset, float("-inf"))
    return torch.matmul(F.softmax(s, dim=-1), v)


def split_heads(t, heads):
    b, n, h = t.shape
    return t.view(b, n, heads, h // heads).transpose(1, 2)


def merge_heads(t):
    b, heads, n, d = t.shape
    return t.transpose(1, 2).reshape(b, n, heads * d)


# --- ViT-B/16 (Dosovitskiy et al. 2021), torchvision layout ---

class ViTLayer(nn.Module):
    def __init__(self, hidden, heads, mlp):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
        self.qkv = nn.Linear(hidden, 3 * hidden)  # nn.MultiheadAttention's in_proj
        self.out_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
        self.fc1 = nn.Linear(hidden, mlp)
        self.fc2 = nn.Linear(mlp, hidden)

    def forward(self, x):
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(self.ln_1(x)).chunk(3, dim=-1))
        x = x + self.out_proj(merge_heads(attend(q, k, v)))
        return x + self.fc2(F.gelu(self.fc1(self.ln_2(x))))


class ViT(nn.Module):
    def __init__(self, image=224, patch=16, layers=12, hidden=768, heads=12, mlp=3072, num_classes=1000):
        super().__init__()
        if image % patch:
            raise ValueError(f"vit_b_16: image={image} must be a multiple of the patch size {patch}")
        self.conv_proj = nn.Conv2d(3, hidden, patch, patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.pos_embedding = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, hidden))
        self.layers = nn.Sequential(*[ViTLayer(hidden, heads, mlp) for _ in range(layers)])
        self.ln = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)  # N x patches x hidden
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embedding
        return self.head(self.ln(self.layers(x))[:, 0])


# --- OPT (Zhang et al. 2022): one pre-LN decoder layer, ReLU FFN, causal attention ---

class OPTDecoderLayer(nn.Module):
    """x + out_proj(attn(LN1(x))), then h + fc2(relu(fc1(LN2(h)))). With kv > 0 the layer holds
    a KV cache of `kv` earlier tokens per sequence (buffers, filled by init_random) that the new
    tokens attend over after it. `device`/`dtype` go to the layers (the meta device counts a
    full-size layer without memory)."""

    def __init__(self, hidden, heads, ffn, kv=0, batch=1, device=None, dtype=None):
        super().__init__()
        f = {"device": device, "dtype": dtype}
        self.heads, self.kv = heads, kv
        self.self_attn_layer_norm = nn.LayerNorm(hidden, **f)
        self.q_proj, self.k_proj = nn.Linear(hidden, hidden, **f), nn.Linear(hidden, hidden, **f)
        self.v_proj, self.out_proj = nn.Linear(hidden, hidden, **f), nn.Linear(hidden, hidden, **f)
        self.final_layer_norm = nn.LayerNorm(hidden, **f)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn, **f), nn.Linear(ffn, hidden, **f)
        # The KV cache, state rather than parameters, preallocated with a slot for the new token
        # (a static cache: a decode step writes one slot instead of concatenating the cache).
        cache = (batch, heads, kv + 1, hidden // heads)
        self.register_buffer("k_cache", torch.zeros(cache, **f) if kv else None)
        self.register_buffer("v_cache", torch.zeros(cache, **f) if kv else None)

    def forward(self, x, rows=None):
        """rows: only these token positions' outputs (the fp64 check's cheap form): their queries,
        attention and FFN; keys and values still come from every token."""
        y = self.self_attn_layer_norm(x)
        k, v = split_heads(self.k_proj(y), self.heads), split_heads(self.v_proj(y), self.heads)
        if self.kv:
            if self.k_cache.shape[0] != x.shape[0] or x.shape[1] != 1:
                raise ValueError(f"decode takes one new token for each of the cache's {self.k_cache.shape[0]} sequences, "
                                 f"not {x.shape[0]} x {x.shape[1]}")
            self.k_cache[:, :, self.kv:].copy_(k)
            self.v_cache[:, :, self.kv:].copy_(v)
            k, v = self.k_cache, self.v_cache
        if rows is not None:
            x, y = x[:, rows], y[:, rows]
        o = merge_heads(attend(split_heads(self.q_proj(y), self.heads), k, v, causal_offset=self.kv)) \
            if rows is None else self._rows_attention(y, k, v, rows)
        h = x + self.out_proj(o)
        return h + self.fc2(F.relu(self.fc1(self.final_layer_norm(h))))

    def _rows_attention(self, y, k, v, rows):
        q = split_heads(self.q_proj(y), self.heads)
        out = [attend(q[:, :, i:i + 1], k[:, :, :self.kv + r + 1], v[:, :, :self.kv + r + 1]) for i, r in enumerate(rows)]
        return merge_heads(torch.cat(out, dim=2))


# --- construction, random weights ---

def build(name, image=224, batch=1, kv=0, num_classes=1000, opt_size=None):
    """The model `name` in eval mode (fp32, CPU). `opt_size` overrides OPT-66B's hidden/heads/ffn
    (tests use a small layer)."""
    if name == "resnet18":
        m = ResNet(BasicBlock, (2, 2, 2, 2), num_classes)
    elif name == "resnet50":
        m = ResNet(Bottleneck, (3, 4, 6, 3), num_classes)
    elif name == "mobilenet_v3_small":
        m = MobileNetV3Small(num_classes)
    elif name == "efficientnet_b0":
        m = EfficientNetB0(num_classes)
    elif name == "replknet_31b":
        m = RepLKNet(num_classes=num_classes)
    elif name == "vit_b_16":
        m = ViT(image=image, num_classes=num_classes)
    elif name in OPT:
        size = opt_size or OPT_66B
        m = OPTDecoderLayer(size["hidden"], size["heads"], size["ffn"], kv=kv if name == "opt_66b_decode" else 0,
                            batch=batch)
    else:
        raise ValueError(f"model name '{name}' unknown: expected one of {', '.join(NAMES)}")
    return m.eval()


def param_count(model):
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def init_random(model, seed=0):
    """Random weights that keep activations near unit scale through any depth: weights
    N(0, 1/fan_in), biases and norm shifts small, norm scales and BatchNorm statistics around 1
    (non-trivial, so a layer that ignores them shows in the check). The KV cache is N(0, 1).
    Deterministic for a seed on a device; drawn where the model lives."""
    dev = next(model.parameters()).device
    g = torch.Generator(device=dev)
    g.manual_seed(seed)

    def uniform(t, lo, hi):
        t.copy_(torch.rand(t.shape, generator=g, device=dev, dtype=torch.float32) * (hi - lo) + lo)

    def normal(t, std):
        t.copy_(torch.randn(t.shape, generator=g, device=dev, dtype=torch.float32) * std)

    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            normal(m.weight, 1.0 / math.sqrt(m.weight[0].numel()))
            if m.bias is not None:
                uniform(m.bias, -0.1, 0.1)
        elif isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
            uniform(m.weight, 0.5, 1.5)
            uniform(m.bias, -0.1, 0.1)
            if isinstance(m, nn.BatchNorm2d):
                uniform(m.running_mean, -0.1, 0.1)
                uniform(m.running_var, 0.5, 1.5)
        elif isinstance(m, ViT):
            normal(m.class_token, 0.02)
            normal(m.pos_embedding, 0.02)
        elif isinstance(m, OPTDecoderLayer) and m.kv:
            normal(m.k_cache, 1.0)
            normal(m.v_cache, 1.0)
    return model
