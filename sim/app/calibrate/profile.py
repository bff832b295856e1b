"""Calibrated profiles: `scenarios/calibrations/<gpu>.toml` over a datasheet spec.

A profile replaces some `[hardware]` figures with measured ones (the clock
under load, achieved bandwidths) and the `[model]` constants with fitted
ones, and records what it was fitted on: the raw measurement files, the
commit, and the kernel build. `megasim simulate` uses the profile of the
chosen GPU when one exists and says so; a profile whose kernel build differs
from the sources in this checkout is flagged as stale.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from megasim.contract.files import write_then_rename
from megasim.gpu.build import kernel_build_hash
from megasim.contract.errors import MegasimError
from megasim.contract.files import read_toml
from megasim.contract.spec import GPUSpec
from megasim.app.catalog import SCENARIOS, load_gpu

SECTIONS = ("profile", "hardware", "model", "fit", "uncertainty")


@dataclass(frozen=True)
class CalibrationProfile:
    gpu: str
    hardware: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    fit: dict = field(default_factory=dict)
    uncertainty: dict = field(default_factory=dict)  # held-out residual percentiles (calibrate.uncertainty)

    def apply(self, spec: GPUSpec) -> GPUSpec:
        known = {f.name for f in fields(GPUSpec)}
        unknown = (set(self.hardware) | set(self.model)) - known
        if unknown:
            raise MegasimError(f"calibration profile for {self.gpu}: unknown field(s) {sorted(unknown)}")
        return spec.with_model(**self.hardware, **self.model)

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
        return None


def profile_path(gpu: str, root: Path = SCENARIOS) -> Path:
    return root / "calibrations" / f"{gpu.lower()}.toml"


def load_profile(path) -> CalibrationProfile:
    path = Path(path)
    data = read_toml(path)
    extra = set(data) - set(SECTIONS)
    if extra or "profile" not in data or "gpu" not in data["profile"]:
        raise MegasimError(f"{path}: a calibration profile has [profile] (with gpu), [hardware], [model], [fit]")
    prov = dict(data["profile"])
    return CalibrationProfile(gpu=prov.pop("gpu"), hardware=data.get("hardware", {}), model=data.get("model", {}),
                              provenance=prov, fit=data.get("fit", {}), uncertainty=data.get("uncertainty", {}))


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v)) if isinstance(v, float) else str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def save_profile(profile: CalibrationProfile, path) -> Path:
    lines = ["# Calibrated megasim profile: written by `megasim calibrate`, read by `megasim simulate`.", ""]
    for section, values in (("profile", {"gpu": profile.gpu, **profile.provenance}), ("hardware", profile.hardware),
                            ("model", profile.model), ("fit", profile.fit), ("uncertainty", profile.uncertainty)):
        if section == "uncertainty" and not values:
            continue
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
        lines.append("")
    with write_then_rename(path) as tmp:
        tmp.write_text("\n".join(lines))
    return Path(path)


def uncertainty_for(name: str, uncalibrated: bool = False):
    """The calibrated profile's prediction intervals (`Uncertainty`), or None without a profile or one."""
    from megasim.app.calibrate.uncertainty import Uncertainty
    path = profile_path(load_gpu(name).name)
    if uncalibrated or not path.exists():
        return None
    values = load_profile(path).uncertainty
    return Uncertainty.from_dict(values) if values else None


def gpu_for_simulation(name: str, uncalibrated: bool = False) -> tuple[GPUSpec, str]:
    """The spec `megasim simulate` uses, and one line saying which (and whether it is stale)."""
    spec = load_gpu(name)
    path = profile_path(spec.name)
    if uncalibrated or not path.exists():
        why = "--uncalibrated" if uncalibrated else "no calibration profile"
        return spec, f"model: datasheet spec scenarios/gpus/{spec.name}.toml ({why})"
    profile = load_profile(path)
    note = (f"model: calibrated profile {path.relative_to(SCENARIOS.parent)} "
            f"(kernel build {profile.provenance.get('kernel_build', '?')}, {profile.provenance.get('date', '?')})")
    stale = profile.stale()
    return profile.apply(spec), note + (f"; WARNING: {stale}" if stale else "")
