import pytest

from jobs.keys import MetaField, SessionKey
from jobs.session.meta import MetaHash, SessionMeta
from jobs.session.state import set_state, state_of
from jobs.session.store import SessionStore

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def test_every_meta_field_is_read_from_the_field_its_constant_names():
    names = {value for name, value in vars(MetaField).items() if name.isupper()}
    aliases = {field.validation_alias for field in SessionMeta.model_fields.values()}
    assert aliases == names
    assert all(name == field.validation_alias for name, field in SessionMeta.model_fields.items())


def test_an_unwritten_session_reads_as_idle_and_empty(redis):
    meta = MetaHash(redis, KEY)
    assert meta.read() == SessionMeta() and meta.read().state == "idle"
    assert not meta.exists()


def test_each_fact_is_set_and_cleared_by_name(redis):
    store = SessionStore(redis, KEY)
    store.touch()
    set_state(store, "running", turn_id="t1", job="turn-abc")
    store.meta.park_step("s1")
    store.meta.request_resume("U1")
    store.meta.note_cancel_asked(1_700_000_000_000)
    store.meta.set_delivered("1-0")

    meta = store.meta.read()
    assert (state_of(store), meta.turn_id, meta.job, meta.parked_step) == ("running", "t1", "turn-abc", "s1")
    assert (meta.resume_requested, meta.cancel_at, meta.delivered) == ("U1", 1_700_000_000_000, "1-0")
    assert meta.created is not None and meta.updated is not None and meta.last_turn_reason is None

    store.meta.clear_parked_step()
    store.meta.clear_resume_request()
    store.meta.clear_cancel_asked()
    meta = store.meta.read()
    assert (meta.parked_step, meta.resume_requested, meta.cancel_at) == (None, None, None)
    assert store.meta.raw()[MetaField.STATE] == "running"


def test_lineage_takes_only_sub_agent_fields(redis):
    meta = MetaHash(redis, KEY)
    meta.set_lineage({MetaField.SUB_PARENT: "T1:C1:1.0", MetaField.SUB_ITEM: ""})
    assert (meta.read().sub_parent, meta.read().sub_item) == ("T1:C1:1.0", "")
    with pytest.raises(ValueError, match="not sub-agent meta fields"):
        meta.set_lineage({MetaField.STATE: "idle"})
