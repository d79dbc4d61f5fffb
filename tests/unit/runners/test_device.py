"""The GPU path, tested on the CPU: device choice, bf16 / channels-last / compile wrapping, FLOPs
per step (hand-counted goldens), peak FLOP/s and MFU, NVML energy (with a fake NVML), and the
new run-document fields. The test marked `gpu` runs the same on a CUDA device."""
from __future__ import annotations

import copy
import time

import pytest
import torch
from torch import nn

import runners.run.device as device_mod
from runners.api import Workload
from runners.run.device import Accelerator, adapt_model, resolve_device
from runners.run.energy import EnergyMeter, trapezoid_joules
from runners.run.flops import PEAK_FLOPS, count_step_flops, mfu, peak_flops
from runners.run.loop import run
from runners.workloads import build_workload
from workbench.catalog import get_workload
from workbench.spec import ExecutionOptions, RunConfig, SpecError, stable_hash
from workbench.store import open_store

NEW_START_FIELDS = ("device", "device_name", "precision", "compile", "channels_last",
                    "flops_per_step", "peak_flops_per_second", "peak_flops_source")
NEW_END_FIELDS = ("peak_memory_bytes", "peak_memory_note", "model_flops", "mfu", "mfu_note",
                  "energy_joules", "mean_power_watts", "energy_source")


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Tiny models on 2 shared cores."""


# --- device choice -------------------------------------------------------------------------------

def test_resolve_device_names():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    with pytest.raises(ValueError, match="valid are cpu, cuda, cuda:<index>, auto"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA device"):
            resolve_device("cuda:0")


def test_run_config_checks_device_and_precision_and_keeps_old_trial_keys():
    with pytest.raises(SpecError, match="valid are fp32, bf16"):
        ExecutionOptions(precision="fp16")
    with pytest.raises(SpecError, match="unknown device"):
        ExecutionOptions(device="gpu")
    plain = RunConfig("synthetic", "adamw", seed=2, study_name="s")
    # the identity of a default run is what it was before these fields existed
    old_ident = ["s", "synthetic", "adamw", "external", 0, 0, 2, {}, None, None]
    assert plain.trial_key == stable_hash(old_ident, 12)
    assert RunConfig("synthetic", "adamw", seed=2, study_name="s",
                     execution=ExecutionOptions(device="cuda", threads=2)).trial_key \
        == plain.trial_key                                   # hardware is not identity
    for change in ({"precision": "bf16"}, {"compile": True}, {"channels_last": True}):
        assert RunConfig("synthetic", "adamw", seed=2, study_name="s",
                         execution=ExecutionOptions(**change)).trial_key \
            != plain.trial_key


# --- the model wrapper ---------------------------------------------------------------------------

def _cnn() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 8 * 8, 3))


def test_bf16_wrapper_keeps_parameters_and_returns_float32():
    model = _cnn()
    names = [n for n, _ in model.named_parameters()]
    params = list(model.parameters())
    x = torch.randn(5, 1, 8, 8)
    exact = model(x)
    assert adapt_model(model, torch.device("cpu"), "bf16") is model
    assert [n for n, _ in model.named_parameters()] == names
    assert all(a is b for a, b in zip(model.parameters(), params))  # optimizers stay valid
    assert isinstance(model, nn.Sequential) and "bf16" in type(model).__qualname__
    out = model(x)
    assert out.dtype == torch.float32
    assert not torch.equal(out, exact) and torch.allclose(out, exact, atol=0.05, rtol=0.05)
    # a deep copy computes with its own weights (the wrapper lives on the class, not the object)
    twin = copy.deepcopy(model)
    with torch.no_grad():
        for p in twin.parameters():
            p.zero_()
    assert torch.count_nonzero(twin(x)) == 0 and torch.count_nonzero(model(x)) > 0


def test_adapted_classes_are_shared_by_runs_with_the_same_settings():
    a = adapt_model(_cnn(), torch.device("cpu"), "bf16")
    b = adapt_model(_cnn(), torch.device("cpu"), "bf16")
    c = adapt_model(_cnn(), torch.device("cpu"), "bf16", channels_last=True)
    assert type(a) is type(b) and type(c) is not type(a)


def test_channels_last_only_for_conv_models_and_fp32_untouched():
    model = adapt_model(_cnn(), torch.device("cpu"), "fp32", channels_last=True)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert model(torch.randn(2, 1, 8, 8)).shape == (2, 3)
    mlp = nn.Sequential(nn.Linear(3, 2))
    assert type(adapt_model(mlp, torch.device("cpu"), "fp32", channels_last=True)) is nn.Sequential
    with pytest.raises(ValueError, match="valid are fp32, bf16"):
        adapt_model(mlp, torch.device("cpu"), "fp8")


def test_compile_wraps_the_forward_in_torch_compile(monkeypatch):
    compiled = []

    def fake_compile(fn):
        compiled.append(fn)
        return fn

    monkeypatch.setattr(device_mod.torch, "compile", fake_compile)
    monkeypatch.setattr(device_mod, "_ADAPTED", {})  # no class compiled by another test
    model = adapt_model(nn.Sequential(nn.Linear(3, 2)), torch.device("cpu"), compile=True)
    assert len(compiled) == 1 and "compiled" in type(model).__qualname__
    assert model(torch.randn(4, 3)).shape == (4, 2)


@pytest.mark.slow
def test_compile_really_compiles_on_the_first_call(monkeypatch):
    """Dynamo traces our forward (nn.Module.compile would silently compile nothing in torch 2.13)."""
    import torch._dynamo

    monkeypatch.setattr(device_mod, "_ADAPTED", {})
    torch._dynamo.reset()
    model = adapt_model(nn.Sequential(nn.Linear(3, 2)), torch.device("cpu"), compile=True)
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    model(torch.randn(4, 3))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == before + 1


# --- FLOPs, peaks, MFU ---------------------------------------------------------------------------

def test_digits_cnn_flops_per_step_match_the_hand_count():
    """Batch 64, 8x8 images, convs 3x3 1->16 and 16->32 (padding 1), linear 512->10; 2 FLOPs/MAC.

    forward: conv1 64*64*16*9*2 = 1,179,648; conv2 64*64*32*16*9*2 = 37,748,736;
             linear 64*512*10*2 = 655,360                               -> 39,583,744
    backward: weight grads of all three (= their forward FLOPs) plus input grads of conv2 and the
              linear (conv1's input needs none)                         -> 77,987,840
    """
    w = build_workload(get_workload("digits_cnn"))
    assert count_step_flops(w.init_model(0), w, 64, 0) == 39_583_744 + 77_987_840


class _BatchNormWorkload(Workload):
    """A linear + batch-norm model on random data, to see that counting leaves BN statistics alone."""

    def init_model(self, seed):
        return nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4))

    def train_batches(self, batch_size, seed):
        gen = torch.Generator().manual_seed(seed)
        while True:
            yield {"inputs": torch.randn(batch_size, 6, generator=gen) + 3.0}

    def loss(self, model, batch):
        return model(batch["inputs"]).square().mean()

    def evaluate(self, model, split):
        return {}


def test_counting_flops_leaves_the_model_and_its_statistics_alone():
    w = _BatchNormWorkload(get_workload("synthetic"), torch.device("cpu"))
    model = w.init_model(0)
    state = copy.deepcopy(model.state_dict())
    flops = count_step_flops(model, w, 10, 0)
    assert flops == 3 * 2 * 10 * 6 * 4 - 2 * 10 * 6 * 4  # fwd + weight grad; no input grad
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k
    assert all(p.grad is None for p in model.parameters())


class _TokensWorkload(Workload):
    """Random token windows for a small GPT: FLOPs need no corpus."""

    def __init__(self, spec, device, model_fn):
        super().__init__(spec, device)
        self.model_fn = model_fn

    def init_model(self, seed):
        return self.model_fn()

    def train_batches(self, batch_size, seed):
        gen = torch.Generator().manual_seed(seed)
        while True:
            ids = torch.randint(0, 11, (batch_size, 17), generator=gen)
            yield {"inputs": ids[:, :-1], "targets": ids[:, 1:]}

    def loss(self, model, batch):
        return nn.functional.cross_entropy(model(batch["inputs"]).flatten(0, 1),
                                           batch["targets"].flatten())

    def evaluate(self, model, split):
        return {}


def test_transformer_flops_include_attention_on_cpu():
    """Counted = 6 N per token (weights) + 14 L T d per token (attention: 12 as in PaLM's formula,
    plus 2 for the recomputed Q K^T in the flash-attention backward)."""
    from runners.workloads.shakespeare import GPT

    layers, width, context, vocab, batch = 2, 32, 16, 11, 4
    w = _TokensWorkload(get_workload("synthetic"), torch.device("cpu"),
                        lambda: GPT(vocab, context, layers, 4, width))
    model = w.init_model(0)
    n = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    tokens = batch * context
    assert count_step_flops(model, w, batch, 0) == (6 * n + 14 * layers * context * width) * tokens


def test_peak_flops_table_and_mfu(monkeypatch):
    value, note = peak_flops(torch.device("cpu"), "bf16")
    assert value is None and "MFU not computed" in note
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    value, source = peak_flops(torch.device("cuda:0"), "bf16")
    assert value == 989.4e12 and "H200" in source
    assert peak_flops(torch.device("cuda:0"), "fp32")[0] == 66.9e12
    # each board by its own name: the SXM, PCIe and NVL H100s differ by a third
    for board, bf16 in [("NVIDIA H100 80GB HBM3", 989.4e12), ("NVIDIA H100 PCIe", 756.5e12),
                        ("NVIDIA H100 NVL", 835.5e12), ("NVIDIA H200 NVL", 835.5e12),
                        ("NVIDIA A100-SXM4-80GB", 312e12), ("NVIDIA L40S", 362.05e12)]:
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None, b=board: b)
        assert peak_flops(torch.device("cuda:0"), "bf16")[0] == bf16, board
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 PCIe-X")
    value, note = peak_flops(torch.device("cuda:0"), "bf16")  # another board: not guessed
    assert value is None and "not in runners.run.flops.PEAK_FLOPS" in note
    for peak in PEAK_FLOPS:  # dense figures: bf16 tensor peaks above fp32, below 1 PFLOP/s
        assert peak.flops["fp32"] < peak.flops["bf16"] < 1e15, peak.pattern
    assert all(p.source and p.flops for p in PEAK_FLOPS)
    assert mfu(1e12, 100, 2.0, 1e14) == pytest.approx(0.5)
    assert mfu(None, 100, 2.0, 1e14) is None and mfu(1e12, 100, 2.0, None) is None
    assert mfu(1e12, 100, 0.0, 1e14) is None


# --- energy ----------------------------------------------------------------------------------------

class FakeNVML:
    """The few pynvml calls EnergyMeter makes; power 200 W, counter +250 J per read."""

    def __init__(self, counter: bool = True, fail: Exception | None = None):
        self.counter, self.fail, self.energy_mj = counter, fail, 1_000_000

    def nvmlInit(self):
        if self.fail:
            raise self.fail

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("gpu", index)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.counter:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        self.energy_mj += 250_000
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, handle):
        return 200_000  # milliwatts


def test_trapezoid_energy():
    assert trapezoid_joules([(0.0, 100.0), (1.0, 300.0), (3.0, 300.0)]) == 200.0 + 600.0
    assert trapezoid_joules([(0.0, 5.0)]) == 0.0


def test_energy_from_the_counter_and_from_power_samples():
    meter = EnergyMeter(torch.device("cuda:0"), nvml=FakeNVML(counter=True))
    meter.start()
    meter.stop()
    s = meter.summary()
    assert s["energy_joules"] == 250.0 and "total energy counter" in s["energy_source"]
    sampled = EnergyMeter(torch.device("cuda:0"), interval=0.01, nvml=FakeNVML(counter=False))
    sampled.start()
    time.sleep(0.2)
    sampled.stop()
    s = sampled.summary()
    assert "power samples" in s["energy_source"]
    assert s["mean_power_watts"] == pytest.approx(200.0)
    assert s["energy_joules"] == pytest.approx(200.0 * 0.2, rel=0.5)


def test_energy_not_recorded_says_why():
    assert "device is cpu" in EnergyMeter(torch.device("cpu")).summary()["energy_source"]
    broken = EnergyMeter(torch.device("cuda:0"), nvml=FakeNVML(fail=OSError("no libnvidia-ml")))
    broken.start()
    broken.stop()
    s = broken.summary()
    assert s["energy_joules"] is None and "NVML unavailable" in s["energy_source"]
    assert "no libnvidia-ml" in s["energy_source"]


# --- the run document ----------------------------------------------------------------------------

def test_runs_record_device_precision_flops_memory_and_energy(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    cfg = RunConfig("digits_cnn", "adamw", max_steps=20, stop_on_target=False,
                    execution=ExecutionOptions(precision="bf16", channels_last=True, device=(
                        "auto" if not torch.cuda.is_available() else "cpu")))
    doc = store.run_doc(run(cfg, store))
    assert doc["status"] == "complete"
    for key in NEW_START_FIELDS + NEW_END_FIELDS:
        assert key in doc, key
    assert doc["device"] == "cpu" and doc["precision"] == "bf16" and doc["channels_last"] is True
    assert doc["compile"] is False
    assert doc["compile_seconds"] == 0.0 and doc["compile_cache"] is None
    assert doc["flops_per_step"] == 117_571_584 and doc["model_flops"] == 20 * 117_571_584
    assert doc["mfu"] is None and "MFU not computed" in doc["mfu_note"]
    assert doc["peak_memory_bytes"] is None and "CUDA only" in doc["peak_memory_note"]
    assert doc["energy_joules"] is None and doc["energy_source"].startswith("not recorded")


def test_compilation_is_on_the_training_clock(tmp_path, monkeypatch):
    """A compiled forward whose first call takes 0.5 s: the run's training time includes it."""

    def slow_first_call(fn):
        calls = []

        def wrapper(*args, **kwargs):
            if not calls:
                calls.append(1)
                time.sleep(0.5)
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(device_mod.torch, "compile", slow_first_call)
    monkeypatch.setattr(device_mod, "_ADAPTED", {})
    store = open_store(tmp_path / "store", create=True)
    cfg = RunConfig("synthetic", "adamw", max_steps=5, stop_on_target=False,
                    execution=ExecutionOptions(compile=True))
    doc = store.run_doc(run(cfg, store))
    assert doc["compile"] is True and doc["train_seconds"] >= 0.5
    assert doc["compile_cache"] == "cold"  # (no real compiler ran: no compile seconds to count)


def test_compiled_classes_are_never_shared_by_two_runs(monkeypatch):
    """A compiled class reused by a later run would hand it the compiled code of an earlier one."""
    monkeypatch.setattr(device_mod.torch, "compile", lambda fn: fn)
    a = adapt_model(_cnn(), torch.device("cpu"), "bf16", compile=True)
    b = adapt_model(_cnn(), torch.device("cpu"), "bf16", compile=True)
    assert type(a) is not type(b) and type(a).__qualname__ == type(b).__qualname__


def test_accelerator_finish_without_a_start_is_still_complete():
    acc = Accelerator(torch.device("cpu"))
    fields = acc.finish(steps=0, train_seconds=0.0)
    assert set(NEW_END_FIELDS) <= set(fields) and fields["mfu"] is None


@pytest.mark.gpu
def test_cuda_run_records_memory_mfu_and_energy(tmp_path):
    store = open_store(tmp_path / "store", create=True)
    cfg = RunConfig("digits_cnn", "adamw", max_steps=50, stop_on_target=False,
                    execution=ExecutionOptions(device="cuda", precision="bf16", compile=True,
                                               channels_last=True))
    doc = store.run_doc(run(cfg, store))
    assert doc["status"] == "complete" and doc["device"].startswith("cuda")
    assert doc["peak_memory_bytes"] > 0
    if doc["peak_flops_per_second"]:
        assert 0 < doc["mfu"] < 1
    assert doc["energy_source"]


def test_the_compile_mode_is_an_execution_option_checked_and_recorded():
    from workbench.spec import COMPILE_MODES, ExecutionOptions, SpecError

    options = ExecutionOptions(compile=True, compile_mode="max-autotune")
    assert options.label() == "cpu, fp32, 1 thread, compile max-autotune"
    assert ExecutionOptions(compile=True).label() == "cpu, fp32, 1 thread, compile"
    assert "compile_mode" not in options.identity()  # speed, not what is computed
    assert ExecutionOptions.from_dict({"compile": True}).compile_mode == "default"  # old records
    with pytest.raises(SpecError, match="unknown compile mode 'fast': valid are default, "):
        ExecutionOptions(compile=True, compile_mode="fast")
    with pytest.raises(SpecError, match="goes with compile"):
        ExecutionOptions(compile_mode="reduce-overhead")
    assert COMPILE_MODES[0] == "default"
    model = adapt_model(nn.Linear(3, 2), torch.device("cpu"), compile=True,
                        compile_mode="max-autotune-no-cudagraphs")
    assert "compiled" in type(model).__qualname__
    accelerator = Accelerator(torch.device("cpu"), compile=True, compile_mode="max-autotune")
    assert accelerator.document()["compile_mode"] == "max-autotune"
    assert Accelerator(torch.device("cpu")).document()["compile_mode"] is None
