"""Live study progress: counts, and the latest eval of each running trial read from the store."""
from __future__ import annotations

from runners.launch.study import StudyResult
from runners.launch.progress import Snapshot, StudyProgress
from workbench.spec import RunConfig
from workbench.store import open_store


def _start(store, config: RunConfig):
    return store.new_run({"trial_key": config.trial_key, "workload": config.workload,
                          "algorithm": config.algorithm, "study_name": config.study_name})


def test_progress_shows_counts_and_the_latest_eval_of_each_running_trial(tmp_path, capsys):
    store = open_store(tmp_path / "s", create=True)
    a = RunConfig(workload="digits_mlp", algorithm="adamw", study_name="p", trial=0)
    b = RunConfig(workload="digits_mlp", algorithm="adamw", study_name="p", trial=1)
    writer = _start(store, a)
    writer.append_eval({"eval_index": 0, "step": 25, "train_seconds": 1.5,
                        "validation/accuracy": 0.5})
    writer.append_eval({"eval_index": 1, "step": 50, "train_seconds": 3.25,
                        "validation/accuracy": 0.75})
    _start(store, b)  # running, no eval yet
    result = StudyResult(planned=5, succeeded=2, failed=["x: worker killed by signal 9"])

    view = StudyProgress(store, total=5, enabled=True)
    snap = view.update(result, [a, b], force=True)
    view.close()
    assert (snap.done, snap.failed, len(snap.running)) == (2, 1, 2)
    assert snap.running[0].latest["step"] == 50
    assert snap.running[1].latest is None
    lines = snap.text().splitlines()
    assert lines[0] == "3/5 trials finished: 2 done, 2 running, 1 failed"
    assert lines[1].endswith("step 50  validation/accuracy=0.75  train 3.2 s")
    assert lines[2].endswith("no eval yet")
    assert "3/5" in capsys.readouterr().err  # the terminal bar

    writer.finish("complete")
    assert store.latest_eval(a.trial_key) is None  # finished trials are not "running"


def test_snapshot_headline_counts():
    assert Snapshot(total=4, done=4, failed=0).headline() == \
        "4/4 trials finished: 4 done, 0 running, 0 failed"


def test_in_a_notebook_progress_is_one_text_block_updated_in_place(tmp_path, monkeypatch):
    import runners.launch.progress as progress

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(obj.data)

    def display(obj, display_id=False):
        assert display_id is True  # an updatable output, not a new one per refresh
        shown.append(obj.data)
        return Handle()

    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr("IPython.display.display", display)
    store = open_store(tmp_path / "s", create=True)
    view = StudyProgress(store, total=2, enabled=True)
    view.update(StudyResult(planned=2, succeeded=1), [], force=True)
    view.close()
    assert shown[0].startswith("<pre>0/2 trials finished")
    assert shown[-1] == "<pre>1/2 trials finished: 1 done, 0 running, 0 failed</pre>"
