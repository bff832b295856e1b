"""Laws that no shipped spec or profile selected were deleted on 2026-11-27 (`git show 07dc169:<path>` has
them: sim/engine/write_back.py, sim/engine/company.py, sim/engine/dispatch/ticket_race.py), and the four legacy
forms only a frozen study profile used, the same day (`git show b2919cd:sim/contract/spec.py`): a file that
still names one is refused in one line naming the field, not run under a law the engine no longer has."""
import pytest

from megasim.app.catalog import SCENARIOS
from megasim.contract.errors import MegasimError
from megasim.io.files import read_toml
from megasim.engine.model import model_from_table

DELETED = ["write_back", "dirty_l2_fraction", "neighbour_slowdown", "unshared_fp32", "memory_path_share",
           "fused_code_factor", "fused_code_by_variant", "ticket_race", "block_launch_cycles",
           "serial_latency", "issued_flops", "gemm_half_efficiency_channels", "block_bytes_per_cycle"]


@pytest.mark.parametrize("field", DELETED)
def test_a_deleted_law_is_an_unknown_field(field):
    data = read_toml(SCENARIOS / "gpus" / "h200.toml")
    with pytest.raises(MegasimError, match=f"unknown field.*'{field}'.*\\[model\\]"):
        model_from_table({**data["model"], field: 0}, "h200.toml")


@pytest.mark.parametrize("field", ["sm_sharing", "issue_weight", "gemm_bodies", "fused_gemm_bodies"])
def test_a_law_field_of_before_the_laws_were_named_says_where_it_went(field):
    """The laws kept were fields of the spec until 2026-11-28; a file of then gets the law's spelling."""
    with pytest.raises(MegasimError, match=f"unknown field\\(s\\) \\['{field}'\\] in \\[model\\] \\(now .*laws"):
        model_from_table({field: 0}, "h200.toml")
