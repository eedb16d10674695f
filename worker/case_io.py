"""A setup request as a case: its dtype and device as torch objects, its parameters, and the raw
little-endian files its inputs come from and its output goes to (docs/worker-protocol.md)."""
class Unsupported(Exception):
    """This impl cannot run this case here: the reply is {"ok": false, "unsupported": why}."""


# Protocol elem -> (numpy dtype the file is read as, torch dtype name it is viewed as). numpy has
# no bf16 or fp8: their bits are read as integers of the same width and reinterpreted.
ELEMS = {
    "f64": ("<f8", "float64"),
    "f32": ("<f4", "float32"),
    "f16": ("<f2", "float16"),
    "bf16": ("<i2", "bfloat16"),
    "fp8_e4m3": ("u1", "float8_e4m3fn"),
    "s8": ("i1", "int8"),
    "u8": ("u1", "uint8"),
    "s32": ("<i4", "int32"),
}

# opmeter dtype names (src/util/dtype.cpp) -> torch dtype names; tf32 is fp32 storage.
DTYPES = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp8": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "int8": "int8",
}


def torch_dtype(torch, name, what):
    """torch.<name>, or Unsupported when this torch lacks it (fp8 before 2.1)."""
    dt = getattr(torch, name, None)
    if dt is None:
        raise Unsupported(f"{what} needs torch.{name}, which torch {torch.__version__} lacks")
    return dt


def elem_dtype(torch, elem):
    if elem not in ELEMS:
        raise ValueError(f"unknown elem '{elem}': expected one of {', '.join(ELEMS)}")
    return torch_dtype(torch, ELEMS[elem][1], f"elem {elem}")


def case_dtype(torch, name):
    if name not in DTYPES:
        raise Unsupported(f"dtype '{name}' is not one the worker knows ({', '.join(DTYPES)})")
    return torch_dtype(torch, DTYPES[name], f"dtype {name}")


def parse_device(torch, name):
    """cpu or cuda:N, checked against what this machine has."""
    if name in (None, "", "cpu"):
        return torch.device("cpu")
    if not name.startswith("cuda"):
        raise Unsupported(f"device '{name}': the worker runs on cpu and cuda:N only")
    if not torch.cuda.is_available():
        raise Unsupported(f"device {name}: torch {torch.__version__} sees no CUDA device here")
    dev = torch.device(name)
    index = dev.index if dev.index is not None else 0
    count = torch.cuda.device_count()
    if index >= count:
        raise Unsupported(f"device {name}: this machine has {count} CUDA device(s)")
    return torch.device("cuda", index)


def read_tensor(torch, path, elem, count):
    """count raw little-endian elements of `elem` from `path`, as a CPU tensor."""
    import numpy as np  # here, not at import: a worker without numpy still says hello
    dt = elem_dtype(torch, elem)
    np_dtype = ELEMS[elem][0]
    arr = np.fromfile(path, dtype=np.dtype(np_dtype), count=count)
    if arr.size != count:
        raise ValueError(f"{path}: {arr.size} {elem} elements, expected {count}")
    t = torch.from_numpy(arr)
    return t if t.dtype == dt else t.view(dt)


def write_tensor(torch, t, path, elem, count):
    """Writes `t`, converted to `elem`, to `path` as raw bytes."""
    dt = elem_dtype(torch, elem)
    if t.numel() != count:
        raise ValueError(f"the output has {t.numel()} elements (shape {tuple(t.shape)}), expected {count} {elem}")
    t = t.detach().reshape(-1).to(dt).contiguous().cpu()
    # numpy cannot hold bf16 or fp8: write their bits as integers of the same width.
    if dt == getattr(torch, "bfloat16"):
        t = t.view(torch.int16)
    elif dt == getattr(torch, "float8_e4m3fn", None):
        t = t.view(torch.uint8)
    t.numpy().tofile(path)


class Case:
    """A setup request, parsed. params stay strings; int()/get() read them."""

    def __init__(self, torch, req):
        self.torch = torch
        self.impl = req.get("impl", "")
        self.op = req.get("op", "")
        self.dtype_name = req.get("dtype", "fp32")
        self.params = {k: str(v) for k, v in (req.get("params") or {}).items()}
        self.threads = int(req.get("threads") or 0)
        self.copies = max(1, int(req.get("copies") or 1))
        self.hot = bool(req.get("hot", False))
        self.graph = int(req.get("graph") or 0)
        self.inputs = list(req.get("inputs") or [])
        # An op with lookup tables: which inputs are tables and how many copies the sets share,
        # and the other inputs' own draws for sets 1.. (docs/worker-protocol.md).
        self.tables = dict(req.get("tables") or {})
        self.set_inputs = list(req.get("set_inputs") or [])
        self.output = req.get("output")
        self.kernel = req.get("kernel")
        self.device = parse_device(torch, req.get("device", "cpu"))
        self.dtype = case_dtype(torch, self.dtype_name)

    @property
    def cuda(self):
        return self.device.type == "cuda"

    def get(self, key, default=None):
        if key in self.params:
            return self.params[key]
        if default is None:
            raise ValueError(f"{self.op}: parameter '{key}' missing")
        return default

    def int(self, key, default=None):
        v = self.get(key, None if default is None else str(default))
        try:
            return int(v)
        except ValueError:
            raise ValueError(f"{self.op}: parameter {key}='{v}' is not an integer") from None

    def load_inputs(self, paths=None):
        """The inputs as CPU tensors, from the setup's files or from `paths` (check)."""
        if paths is not None and len(paths) != len(self.inputs):
            raise ValueError(f"{len(paths)} input files, the case has {len(self.inputs)} inputs")
        out = []
        for i, desc in enumerate(self.inputs):
            path = desc["path"] if paths is None else paths[i]
            out.append(read_tensor(self.torch, path, desc["elem"], int(desc["count"])))
        return out

    def input_copies(self):
        """`copies` sets of the inputs on the device: copies of set 0, but with lookup tables each
        set's own draw of the other inputs, and set s reading table copy s % tables.copies."""
        host = self.load_inputs()
        tables = {int(i) for i in self.tables.get("inputs", [])}
        table_copies = int(self.tables.get("copies") or 0) or self.copies
        own = {}
        for d in self.set_inputs:
            count, sets = int(d["count"]), int(d["sets"])
            if sets != self.copies - 1:
                raise ValueError(f"set_inputs: {sets} sets of input {d['input']}, the case has {self.copies} copies")
            own[int(d["input"])] = read_tensor(self.torch, d["path"], d["elem"], count * sets).view(sets, count)
        out = []
        for s in range(self.copies):
            ins = []
            for i, t in enumerate(host):
                if i in tables and s >= table_copies:
                    ins.append(out[s % table_copies][i])
                elif s > 0 and i in own:
                    ins.append(own[i][s - 1].to(self.device, copy=True))
                else:
                    ins.append(t.to(self.device, copy=True))
            out.append(ins)
        return out


class Prepared:
    """An impl ready to call: `fn(*args[copy])` returns the output tensor for input set `copy`.

    `prep(*inputs)` turns one set of input tensors into fn's arguments (views, weights in the
    model's dtype, labels as int64, a user kernel's state); it runs once per copy at setup and
    again for the fresh inputs a check brings. `fn` is shared by all copies, so torch.compile
    wraps it once. `verify(inputs, out)`, for an op whose answer opmeter cannot compute (model),
    returns the check's verdict: {"max_error", "tolerance", "detail"}."""

    def __init__(self, fn, prep, input_sets, details=None, verify=None, check_fn=None):
        self.fn = fn
        self.prep = prep
        self.args = [tuple(prep(*ins)) for ins in input_sets]
        self.details = dict(details or {})
        self.verify = verify
        self.check_fn = check_fn  # what a check calls where it differs from the timed call (training)

    def call(self, copy):
        return self.fn(*self.args[copy])

    def check_call(self, copy):
        return (self.check_fn or self.fn)(*self.args[copy])

    def refresh(self, copy, inputs):
        """Input set `copy` from new tensors (check loads fresh inputs into set 0)."""
        self.args[copy] = tuple(self.prep(*inputs))
