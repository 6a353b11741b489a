"""The pages, rendered from the last snapshot as plain HTML that refreshes itself.

No script is needed to read them: a meta refresh reloads the page every --refresh
seconds, the plots are inline SVG, and trouble is marked with a CSS class the tests and
the eye both find (`down`, `under-replicated`, `offline`, `lagging`, all in red).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from html import escape

from kafkalike.dashboard.model import UP, Snapshot
from kafkalike.dashboard.rates import History
from kafkalike.dashboard.svg import line_plot

STYLE = """
body{font-family:DejaVu Sans,Arial,sans-serif;margin:16px;color:#222;background:#fff}
nav a{margin-right:14px} h1{font-size:20px;margin:0 0 6px} h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;margin:4px 0 10px} th,td{border:1px solid #ccc;padding:3px 8px;
text-align:left;font-size:13px} th{background:#eee} td.num{text-align:right}
.down,.under-replicated,.offline,.lagging{color:#b00020;font-weight:bold}
tr.down td,tr.under-replicated td,tr.offline td{background:#fde7e9}
.ok{color:#137333} .status{font-size:12px;color:#555} .errors{color:#b00020;font-size:12px}
.summary span{margin-right:18px}
"""


@dataclass
class DashboardState:
    """What the web side reads: the last snapshot and the counters' histories."""

    bootstrap: str
    refresh: int
    window: float
    rate_source: str
    snapshot: Snapshot | None = None
    produced: History = field(default_factory=lambda: History(600))
    fetched: History = field(default_factory=lambda: History(600))
    collecting_since: float | None = None
    last_failure: str = ""


def _page(state: DashboardState, title: str, body: str) -> bytes:
    nav = " ".join(f'<a href="{href}">{name}</a>' for href, name in
                   (("/", "Cluster"), ("/topics", "Topics"), ("/groups", "Consumer groups"),
                    ("/snapshot.json", "JSON")))
    html = (f'<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="{state.refresh}">'
            f"<title>{escape(title)} - kafkalike dashboard</title><style>{STYLE}</style></head><body>"
            f"<h1>{escape(title)}</h1><nav>{nav}</nav>{_status(state)}{body}</body></html>")
    return html.encode("utf-8")


def _status(state: DashboardState) -> str:
    now = time.time()
    snap = state.snapshot
    parts = [f"bootstrap {escape(state.bootstrap)}"]
    if snap is None:
        parts.append("first look at the cluster under way")
    else:
        parts.append(f"updated {time.strftime('%H:%M:%S', time.localtime(snap.taken_at))} "
                     f"({now - snap.taken_at:.0f} s ago, took {snap.duration:.1f} s)")
    if state.collecting_since is not None and time.monotonic() - state.collecting_since > 2 * state.refresh:
        parts.append(f'<span class="down">cluster slow: looking for {time.monotonic() - state.collecting_since:.0f} s'
                     "</span>")
    if state.last_failure:
        parts.append(f'<span class="down">{escape(state.last_failure)}</span>')
    out = f'<p class="status">{" · ".join(parts)}</p>'
    if snap is not None and snap.errors:
        out += '<ul class="errors">' + "".join(f"<li>{escape(e)}</li>" for e in snap.errors) + "</ul>"
    return out


def _ids(ids) -> str:
    return ",".join(str(i) for i in ids)


def cluster_page(state: DashboardState) -> bytes:
    snap = state.snapshot
    if snap is None:
        return _page(state, "Cluster", "<p>Waiting for the first look at the cluster.</p>")
    controller = snap.controller_id if snap.controller_id >= 0 else "none"
    epoch = f" (epoch {snap.controller_epoch})" if snap.controller_epoch is not None else ""
    down = sum(1 for b in snap.brokers if b.status != UP)
    summary = (f'<p class="summary"><span>cluster id <b>{escape(snap.cluster_id or "?")}</b></span>'
               f'<span id="controller">controller <b>{controller}</b>{epoch}</span>'
               f'<span>brokers up <b>{len(snap.brokers) - down}</b>/{len(snap.brokers)}</span>'
               f'<span class="{"under-replicated" if snap.under_replicated else "ok"}">'
               f"under-replicated partitions <b>{snap.under_replicated}</b></span>"
               f'<span class="{"offline" if snap.offline else "ok"}">offline partitions <b>{snap.offline}</b></span>'
               "</p>")
    rows = []
    for b in snap.brokers:
        cls = "up" if b.status == UP else "down"
        registered = "" if b.registered is None else ("yes" if b.registered else "no")
        rows.append(f'<tr class="broker {cls}" id="broker-{b.id}" data-broker="{b.id}" data-status="{b.status}">'
                    f'<td class="num">{b.id}</td><td>{escape(b.host)}:{b.port}</td><td>{escape(b.rack or "")}</td>'
                    f'<td class="{cls}">{b.status}</td><td>{"controller" if b.is_controller else ""}</td>'
                    f"<td>{registered}</td><td>{escape(b.reason)}</td></tr>")
    brokers = ("<h2>Brokers</h2><table id=\"brokers\"><tr><th>id</th><th>address</th><th>rack</th><th>status</th>"
               "<th>role</th><th>in ZooKeeper</th><th>why down</th></tr>" + "".join(rows) + "</table>")
    if state.rate_source == "prometheus":
        produce_unit, fetch_title, fetch_unit = ("records/s (MessagesInPerSec, from the brokers' metrics)",
                                                 "Fetch rate per topic", "bytes/s out to consumers (BytesOutPerSec)")
    else:
        produce_unit, fetch_title, fetch_unit = ("records/s (log end offsets sampled over time)",
                                                 "Consume rate per group", "records/s (committed offsets over time)")
    plots = (f"<h2>Produce rate per topic</h2>"
             f"{line_plot('Produce rate per topic', produce_unit, state.produced.rates(), state.window)}"
             f"<h2>{fetch_title}</h2>{line_plot(fetch_title, fetch_unit, state.fetched.rates(), state.window)}")
    return _page(state, "Cluster", summary + brokers + plots)


def topics_page(state: DashboardState) -> bytes:
    snap = state.snapshot
    if snap is None:
        return _page(state, "Topics", "<p>Waiting for the first look at the cluster.</p>")
    down = {b.id for b in snap.brokers if b.status != UP}
    head = ("<tr><th>topic</th><th>partition</th><th>leader</th><th>replicas</th><th>isr</th>"
            "<th>offline replicas</th><th>log end offset</th><th>state</th></tr>")
    sections = []
    # The users' topics first: __consumer_offsets' 50 partitions would fill the first screen.
    for topic in sorted(snap.topics, key=lambda t: (t.internal, t.name)):
        rows = []
        for p in topic.partitions:
            state_word, cls = "ok", "ok"
            if p.offline:
                state_word, cls = "offline", "offline"
            elif p.under_replicated:
                state_word, cls = "under-replicated", "under-replicated"
            replicas = ",".join(f'<span class="down">{r}</span>' if r in down else str(r) for r in p.replicas)
            leo = "" if p.log_end_offset is None else str(p.log_end_offset)
            rows.append(f'<tr class="partition {cls}" data-topic="{escape(topic.name)}" data-partition="{p.partition}"'
                        f' data-isr="{_ids(p.isr)}"><td>{escape(topic.name)}</td><td class="num">{p.partition}</td>'
                        f'<td class="num">{"none" if p.leader is None else p.leader}</td><td>{replicas}</td>'
                        f"<td>{_ids(p.isr)}</td><td>{_ids(p.offline_replicas)}</td>"
                        f'<td class="num">{leo}</td><td class="{cls}">{state_word}</td></tr>')
        flags = []
        if topic.under_replicated:
            flags.append(f'<span class="under-replicated">{topic.under_replicated} under-replicated</span>')
        if topic.offline:
            flags.append(f'<span class="offline">{topic.offline} offline</span>')
        internal = " (internal)" if topic.internal else ""
        sections.append(f'<h2 id="topic-{escape(topic.name)}">{escape(topic.name)}{internal}: '
                        f"{len(topic.partitions)} partitions, replication factor {topic.replication_factor} "
                        f'{" ".join(flags)}</h2><table class="topic">{head}{"".join(rows)}</table>')
    if not sections:
        sections.append("<p>No topics.</p>")
    return _page(state, "Topics", "".join(sections))


def groups_page(state: DashboardState) -> bytes:
    snap = state.snapshot
    if snap is None:
        return _page(state, "Consumer groups", "<p>Waiting for the first look at the cluster.</p>")
    sections = []
    for g in snap.groups:
        coordinator = "" if g.coordinator is None else f", coordinator {g.coordinator}"
        lag_cls = "lagging" if g.total_lag else "ok"
        title = (f'<h2 id="group-{escape(g.group_id)}">{escape(g.group_id)}: {escape(g.state)}, '
                 f"{len(g.members)} member{'' if len(g.members) == 1 else 's'}{coordinator}, "
                 f'<span class="{lag_cls}">total lag {g.total_lag}</span></h2>')
        if g.error:
            sections.append(title + f'<p class="errors">{escape(g.error)}</p>')
            continue
        members = "".join(f"<tr><td>{escape(m.member_id)}</td><td>{escape(m.client_id)}</td><td>{escape(m.host)}</td>"
                          f'<td>{escape(", ".join(f"{t}-{p}" for t, p in m.assignment))}</td></tr>'
                          for m in g.members)
        member_table = ("<table class=\"members\"><tr><th>member id</th><th>client id</th><th>host</th>"
                        f"<th>assignment</th></tr>{members}</table>" if g.members else "<p>No active members.</p>")
        rows = []
        for lag in g.partitions:
            value = lag.lag
            cls = "lagging" if value else "ok"
            rows.append(f'<tr class="lag" data-group="{escape(g.group_id)}" data-topic="{escape(lag.topic)}" '
                        f'data-partition="{lag.partition}" data-lag="{"" if value is None else value}">'
                        f'<td>{escape(lag.topic)}</td><td class="num">{lag.partition}</td>'
                        f'<td class="num">{"-" if lag.current_offset is None else lag.current_offset}</td>'
                        f'<td class="num">{"-" if lag.log_end_offset is None else lag.log_end_offset}</td>'
                        f'<td class="num {cls}">{"-" if value is None else value}</td>'
                        f'<td>{escape(lag.consumer_id or "-")}</td><td>{escape(lag.host or "-")}</td>'
                        f'<td>{escape(lag.client_id or "-")}</td></tr>')
        lag_table = ('<table class="lags"><tr><th>topic</th><th>partition</th><th>current offset</th>'
                     "<th>log end offset</th><th>lag</th><th>consumer id</th><th>host</th><th>client id</th></tr>"
                     + "".join(rows) + "</table>")
        sections.append(title + member_table + lag_table)
    if not sections:
        sections.append("<p>No consumer groups.</p>")
    return _page(state, "Consumer groups", "".join(sections))
