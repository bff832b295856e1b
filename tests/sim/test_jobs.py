"""Simulation jobs: handed out largest first, returned in the order given; the bar stays off when asked."""
from concurrent.futures import ThreadPoolExecutor

from megasim.app.calibrate.jobs import largest_first, progress


def test_largest_first_returns_results_in_the_order_given_and_ticks_once_each():
    started, ticks = [], []

    def square(x):
        started.append(x)
        return x * x

    with ThreadPoolExecutor(1) as pool:
        out = largest_first(pool, square, [1, 5, 3], costs=[1.0, 5.0, 3.0], tick=lambda: ticks.append(1))
    assert out == [1, 25, 9]
    assert started == [5, 3, 1] and len(ticks) == 3


def test_a_hidden_bar_prints_nothing(capsys):
    with progress("simulating", 3, shown=False) as tick:
        tick()
    with progress("simulating", 3) as tick:  # not a terminal under pytest: rich draws nothing
        tick()
    out, err = capsys.readouterr()
    assert out == "" and err == ""
