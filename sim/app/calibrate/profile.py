"""Calibrated profiles: `scenarios/calibrations/<gpu>.toml` over a datasheet spec.

A profile replaces some `[hardware]` figures with measured ones (the clock
under load, achieved bandwidths) and the `[model]` constants with fitted
ones, and records what it was fitted on: the raw measurement files, the
commit, and the kernel build. `megasim simulate` uses the profile of the
chosen GPU when one exists and says so; a profile whose kernel build differs
from the sources in this checkout is flagged as stale.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Optional

from megasim.gpu.build import kernel_build_hash
from megasim.contract.errors import MegasimError
from megasim.io.files import existing_file, read_toml
from megasim.io.schema import Str, Text, float_in, int_in, parse
from megasim.io.writing import write_then_rename
from megasim.contract.spec import check_hardware_fields, check_spec
from megasim.engine.laws import MODEL_LAWS
from megasim.engine.model import GPUModel, model_from_table
from megasim.app.catalog import SCENARIOS, gpu_path, is_spec_file, load_gpu, shown_path

SECTIONS = ("profile", "hardware", "model", "fit", "uncertainty")


@dataclass(frozen=True)
class CalibrationProfile:
    gpu: str
    hardware: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    fit: dict = field(default_factory=dict)
    uncertainty: dict = field(default_factory=dict)  # held-out residual percentiles (calibrate.uncertainty)

    def apply(self, spec: GPUModel, origin: str | None = None) -> GPUModel:
        """`spec` with this profile's [hardware] figures and its [model] over the spec's model, checked."""
        origin = origin or f"calibration profile for {self.gpu}"
        check_hardware_fields(self.hardware, origin)
        gpu = check_spec(replace(spec, **self.hardware), origin)
        return replace(gpu, model=model_from_table(self.model, origin, spec.model))

    def base_spec(self) -> GPUModel:
        """The spec this profile was fitted over: the spec file `calibrate` wrote for a GPU megasim had no spec
        of (its [profile] spec, resolved against the profile's folder when loaded), else scenarios/gpus/<gpu>."""
        return load_gpu(self.provenance.get("spec") or self.gpu)

    def stale(self) -> str | None:
        """A line saying the kernels changed since the fit, or None.

        A build the profile was re-validated on (its runs re-measured and found the same within noise,
        `revalidated_builds`, the evidence in `revalidation`) counts as the fitted one: the kernel source
        can change where the timed paths do not, and a refit would then only add noise.
        """
        fitted = self.provenance.get("kernel_build")
        now = kernel_build_hash()
        if fitted and fitted != now and now not in self.provenance.get("revalidated_builds", []):
            return f"profile fitted on kernel build {fitted}, the kernels here are build {now}: predictions may be stale"
        return self.predates()

    def predates(self) -> str | None:
        """A line naming the laws this package's calibration fits that the profile lacks, or None: a profile
        fitted before a law existed is stale whatever its kernel build, since re-validating the kernels' text
        says nothing of a model that has moved on since."""
        missing = [n for n in MODEL_LAWS.names() if n not in self.model.get("laws", [])]
        if not missing:
            return None
        return (f"profile fitted before the laws {', '.join(missing)} that calibration now fits: stale, refit it "
                f"(`megasim calibrate --gpu {self.gpu}`)")

    def unpredicted(self) -> str | None:
        """A line naming the part of the decision space this profile predicts nothing for, or None."""
        from megasim.engine.blocks import predicted_precisions
        from megasim.contract.resources import PRECISIONS
        spec_model = model_from_table(self.model, f"calibration profile for {self.gpu}")
        lacking = [p for p in PRECISIONS if p not in predicted_precisions(spec_model)]
        return (f"this profile predicts no {'/'.join(lacking)} build: picks are FP32 only" if lacking else None)

    def warnings(self) -> list[str]:
        """Every line a user of this profile should see: what it cannot predict, and why it may be stale."""
        return [w for w in (self.unpredicted(), self.stale()) if w]


def profile_path(gpu: str, root: Path = SCENARIOS) -> Path:
    return root / "calibrations" / f"{gpu.lower()}.toml"


@dataclass(kw_only=True)
class _Header:
    __pydantic_config__ = {"extra": "allow"}
    gpu: Annotated[str, Str(min_length=1)]
    kernel_build: Text = ""
    spec: Text = ""
    revalidated_builds: list[Text] = field(default_factory=list)
    measurements: list[Text] = field(default_factory=list)


Finite = float_in(-1e6, 1e6)
Ratio = float_in(0.0, 1e6, above=True)


@dataclass(kw_only=True)
class _Uncertainty:
    __pydantic_config__ = {"extra": "forbid"}
    coverage: float_in(0.0, 1.0, above=True)
    heldout_runs: int_in(0, 10**9) = 0
    fused_ratio: tuple[Ratio, Ratio]
    nonfused_ratio: tuple[Ratio, Ratio]
    margin_error: tuple[Finite, Finite]
    mapping_gain: float_in(0.0, 1.0) = 1.0


@dataclass(kw_only=True)
class _ProfileDoc:
    """The file's shape; [hardware] is checked field by field against `GPUSpec`'s types, [model] against the
    engine's `Model` and its laws."""
    __pydantic_config__ = {"extra": "forbid"}
    profile: _Header
    hardware: dict[Text, Any]
    model: dict[Text, Any]
    fit: dict[Text, Any]
    uncertainty: Optional[_Uncertainty] = None


def load_profile(path) -> CalibrationProfile:
    """A profile file, checked: its sections, every value's type and range, and its GPU's SM ids."""
    path = Path(path)
    data = read_toml(path)
    lacking = [s for s in SECTIONS[:4] if s not in data]
    extra = set(data) - set(SECTIONS)
    if extra or lacking or not isinstance(data["profile"], dict) or "gpu" not in data["profile"]:
        raise MegasimError(f"{path}: a calibration profile has [profile] (with gpu), [hardware], [model], [fit]"
                           f"{'; missing ' + ', '.join(f'[{s}]' for s in lacking) if lacking else ''}")
    parse(_ProfileDoc, data, str(path))
    for name, (low, high) in ((k, data.get("uncertainty", {}).get(k, (0, 0)))
                              for k in ("fused_ratio", "nonfused_ratio", "margin_error")):
        if low > high:
            raise MegasimError(f"{path}: [uncertainty] {name} = [{low}, {high}] is inverted: its low end should "
                               "not be above its high end")
    prov = dict(data["profile"])
    if prov.get("spec"):
        prov["spec"] = str(path.parent / prov["spec"])
    profile = CalibrationProfile(gpu=prov.pop("gpu"), hardware=data["hardware"], model=data["model"],
                                 provenance=prov, fit=data["fit"], uncertainty=data.get("uncertainty", {}))
    try:
        base = profile.base_spec()
    except MegasimError as exc:
        raise MegasimError(f"{path}: [profile] {'spec' if profile.provenance.get('spec') else 'gpu'}: {exc}") from None
    profile.apply(base, str(path))
    return profile


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v)) if isinstance(v, float) else str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _laws_first(model: dict) -> dict:
    """A [model] table with `laws` and the laws' tables first: what the profile rests on, before its numbers."""
    first = ["laws", *(k for k in model if k in MODEL_LAWS)]
    return {**{k: model[k] for k in first if k in model}, **model}


def save_profile(profile: CalibrationProfile, path) -> Path:
    lines = ["# Calibrated megasim profile: written by `megasim calibrate`, read by `megasim simulate`.", ""]
    prov = dict(profile.provenance)
    if prov.get("spec"):
        prov["spec"] = Path(os.path.relpath(prov["spec"], Path(path).resolve().parent)).as_posix()
    for section, values in (("profile", {"gpu": profile.gpu, **prov}), ("hardware", profile.hardware),
                            ("model", _laws_first(profile.model)), ("fit", profile.fit),
                            ("uncertainty", profile.uncertainty)):
        if section == "uncertainty" and not values:
            continue
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
        lines.append("")
    with write_then_rename(path) as tmp:
        tmp.write_text("\n".join(lines))
    return Path(path)


def _chosen(name: str, spec_name: str, profile) -> Path | None:
    """The profile a command uses: the one given (which must exist), else a named GPU's committed one, else for
    a spec file the profile `calibrate` fitted over it (`calibrated_beside`). Any other spec file gets none,
    even one called h200.toml (its figures are the user's, not ours)."""
    if profile is None:
        return calibrated_beside(Path(name)) if is_spec_file(name) else profile_path(spec_name)
    return existing_file(profile, f"--profile {profile}")


def calibrated_beside(spec_file: Path) -> Path | None:
    """The profile `megasim calibrate` wrote for a spec it generated: it writes <dir>/gpus/<gpu>.toml and
    <dir>/<gpu>.toml, and the profile names the spec it was fitted over; None where that is not so."""
    candidate = spec_file.parent.parent / spec_file.name
    if spec_file.parent.name != "gpus" or not candidate.is_file():
        return None
    try:
        named = read_toml(candidate).get("profile", {}).get("spec")
    except MegasimError:
        return None
    if not isinstance(named, str) or (candidate.parent / named).resolve() != spec_file.resolve():
        return None
    return candidate


def simulation_model(name: str, uncalibrated: bool = False, profile=None):
    """What `megasim simulate` runs under: the spec, a note saying which (and whether it is stale), printed
    after "model: " and stored as it is in JSON, and the profile's [uncertainty] table (`Uncertainty.from_dict`
    reads it; None without a profile or one). `profile` is a profile file to use instead of the GPU's own.
    A spec file (`--gpu PATH.toml`) takes no committed profile, only a `profile` given; the note names the
    spec file and the profile read, so that neither is picked up unseen. The spec and the profile are read once."""
    spec = load_gpu(name)
    own = is_spec_file(name)
    spec_shown = name if own else shown_path(gpu_path(name))
    path = _chosen(name, spec.name, profile)
    if uncalibrated or path is None or not path.exists():
        why = ("--uncalibrated" if uncalibrated else
               "a --gpu spec file: no committed calibration applies; --profile adds one" if path is None else
               f"no calibration profile: no {shown_path(path)}")
        return spec, f"datasheet spec {spec_shown} ({why})", None
    given = "--profile; " if profile is not None else ""
    profile = load_profile(path)
    if not own and profile.gpu.lower() != spec.name.lower():
        raise MegasimError(f"{path}: [profile] gpu is {profile.gpu!r}, but this is the profile of {spec.name!r}")
    over = (f"over spec file {spec_shown}: both apply, the profile's [hardware] and [model] (fitted on "
            f"{profile.gpu}) replacing the file's" if own else f"over datasheet spec {spec_shown}")
    note = (f"calibrated profile {shown_path(path)} ({given}kernel build {profile.provenance.get('kernel_build', '?')}, "
            f"{profile.provenance.get('date', '?')}) {over}")
    warnings = "".join(f"; WARNING: {w}" for w in profile.warnings())
    return profile.apply(spec), note + warnings, profile.uncertainty or None


def gpu_for_simulation(name: str, uncalibrated: bool = False, profile=None) -> tuple[GPUModel, str]:
    """`simulation_model`'s spec and note."""
    return simulation_model(name, uncalibrated, profile)[:2]
