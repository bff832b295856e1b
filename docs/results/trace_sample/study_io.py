"""What the per-folder studies here share: a sample folder (h100, h200) and a profile in, `<name>.md` and
`<name>.json` out in the folder. The scripts run from this directory, which puts it on the import path."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def folder_and_profile(doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--profile", default="scenarios/calibrations/h200.toml")
    return parser.parse_args()


def write_report(folder: Path, name: str, text: str, data) -> None:
    (folder / f"{name}.md").write_text(text)
    (folder / f"{name}.json").write_text(json.dumps(data, indent=1))
