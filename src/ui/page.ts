/**
 * The page `intercom ui` serves: its HTML, script and style sheet, as
 * strings. No framework and nothing fetched from elsewhere (the server's
 * Content-Security-Policy allows only its own origin).
 *
 * The script opens `/events` (server-sent events) and renders each `view`
 * event, a `UiView` (View.ts) as JSON: the totals, the tables (every cell
 * set through `textContent`, never parsed as HTML) and the sequence chart,
 * an SVG the server built with every name escaped (SequenceChart.ts).
 * Clicking a column header sorts a table; the filter box (`/` focuses it,
 * as in `intercom top`) keeps the rows that contain its text.
 */

/** The page's HTML; `token` goes into the script and style URLs (it is base64url, escaped anyway). */
export const pageHtml = (token: string): string => {
  const query = `?token=${encodeURIComponent(token)}`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>intercom ui</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css${query}">
<script src="/app.js${query}" defer></script>
</head>
<body>
<header>
  <h1>intercom</h1>
  <span id="connection" class="connection connecting" data-testid="connection">connecting…</span>
  <span id="socket" class="muted"></span>
  <input id="filter" type="search" placeholder="filter (/)" aria-label="filter rows" autocomplete="off">
</header>
<section id="totals" class="totals" aria-label="totals"></section>
<main>
  <section>
    <h2>Sessions</h2>
    <table id="sessions" data-testid="sessions"></table>
  </section>
  <section>
    <h2>Open asks <span class="muted" id="stuck-note"></span></h2>
    <table id="asks" data-testid="asks"></table>
  </section>
  <section class="wide">
    <h2>Conversation <span class="muted">(recent traffic, oldest at the top)</span></h2>
    <div id="chart" class="chart" data-testid="chart"></div>
  </section>
  <section>
    <h2>Asks and replies</h2>
    <table id="exchanges" data-testid="exchanges"></table>
  </section>
  <section>
    <h2>Recent refusals</h2>
    <table id="refusals" data-testid="refusals"></table>
  </section>
</main>
</body>
</html>
`
}

/** The page's script (plain browser JavaScript). */
export const APP_JS = String.raw`"use strict";
(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  const sortState = {};
  let filterText = "";
  let lastView = null;

  const ago = (ms) => ms == null ? "–" : ms < 1000 ? ms + " ms" : ms < 60000 ? (ms / 1000).toFixed(1) + " s" : ms < 3600000 ? Math.floor(ms / 60000) + " min " + Math.floor(ms % 60000 / 1000) + " s" : (ms / 3600000).toFixed(1) + " h";
  const time = (at) => at == null ? "–" : new Date(at).toLocaleTimeString([], { hour12: false });
  const short = (id) => id == null ? "–" : String(id).slice(0, 8);
  const rate = (r) => r == null ? "–" : r.toFixed(1) + "/s";

  const TABLES = {
    sessions: [
      ["name", "name"], ["group", "group"], ["status", "status"], ["health", "health"],
      ["pending asks", "pendingAsks"], ["last activity", "lastActivityAgoMs", ago],
      ["in", "messagesIn"], ["out", "messagesOut"], ["rate", "ratePerSecond", rate]
    ],
    asks: [
      ["from", "from"], ["to", "to"], ["asked at", "askedAt", time], ["age", "ageMs", ago], ["message", "messageId", short]
    ],
    exchanges: [
      ["from", "from"], ["to", "to"], ["state", "state"], ["asked at", "askedAt", time],
      ["answered after", "latencyMs", ago], ["message", "messageId", short]
    ],
    refusals: [
      ["time", "at", time], ["from", "from"], ["target", "target"], ["code", "code"], ["reason", "reason"]
    ]
  };

  const rowClass = (table, row) =>
    (row.stuck || row.state === "stuck") ? "stuck" : row.state === "refused" || table === "refusals" ? "refused" : "";

  const fillTable = (name, rows) => {
    const columns = TABLES[name];
    const table = $(name);
    const sort = sortState[name];
    let shown = rows.filter((row) => filterText === "" || columns.some(([, key]) => String(row[key] ?? "").toLowerCase().includes(filterText)));
    if (sort) {
      const key = columns[sort.column][1];
      shown = shown.slice().sort((a, b) => {
        const x = a[key], y = b[key];
        const order = typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
        return sort.descending ? -order : order;
      });
    }
    // The header row is built once and kept: a render replaces only the body, so
    // a click whose press and release straddle a render still lands on its header.
    let head = table.tHead;
    if (!head) {
      head = table.createTHead();
      const headRow = head.insertRow();
      columns.forEach(([label], index) => {
        const th = document.createElement("th");
        th.dataset.label = label;
        th.addEventListener("click", () => {
          const current = sortState[name];
          sortState[name] = { column: index, descending: current && current.column === index ? !current.descending : false };
          if (lastView) render(lastView);
        });
        headRow.appendChild(th);
      });
    }
    [...head.rows[0].cells].forEach((th, index) => {
      th.textContent = th.dataset.label + (sort && sort.column === index ? (sort.descending ? " ▼" : " ▲") : "");
    });
    const body = document.createElement("tbody");
    for (const row of shown) {
      const tr = body.insertRow();
      const css = rowClass(name, row);
      if (css) tr.className = css;
      for (const [, key, format] of columns) {
        const td = tr.insertCell();
        const value = row[key];
        td.textContent = format ? format(value) : value == null ? "–" : String(value);
        if (key === "messageId") td.title = String(value);
      }
    }
    if (shown.length === 0) {
      const td = body.insertRow().insertCell();
      td.colSpan = columns.length;
      td.className = "muted";
      td.textContent = rows.length === 0 ? "none" : "no row matches the filter";
    }
    for (const old of [...table.tBodies]) old.remove();
    table.appendChild(body);
  };

  const fillTotals = (view) => {
    const t = view.totals;
    const items = [
      ["sessions", t.sessions], ["messages/s", t.messagesPerSecond.toFixed(1)], ["routed", t.routed],
      ["refused", t.refused], ["open asks", t.openAsks], ["stuck asks", t.stuckAsks],
      ["mailbox", t.mailbox], ["staged", t.staging], ["outbox chars", t.outbox]
    ];
    $("totals").replaceChildren(...items.map(([label, value]) => {
      const div = document.createElement("div");
      div.className = label === "stuck asks" && value > 0 ? "total stuck" : "total";
      const strong = document.createElement("strong");
      strong.textContent = String(value);
      const span = document.createElement("span");
      span.textContent = label;
      div.append(strong, span);
      return div;
    }));
  };

  const render = (view) => {
    lastView = view;
    const connection = $("connection");
    connection.textContent = view.connection.detail;
    connection.className = "connection " + view.connection.state;
    $("socket").textContent = view.socketPath;
    $("stuck-note").textContent = "(stuck after " + ago(view.stuckAfterMs) + ")";
    fillTotals(view);
    fillTable("sessions", view.sessions);
    fillTable("asks", view.openAsks);
    fillTable("exchanges", view.exchanges);
    fillTable("refusals", view.refusals);
    // Built by the server (SequenceChart.ts), every name and id escaped.
    $("chart").innerHTML = view.chart;
  };

  const filter = $("filter");
  filter.addEventListener("input", () => {
    filterText = filter.value.trim().toLowerCase();
    if (lastView) render(lastView);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "/" && document.activeElement !== filter) {
      event.preventDefault();
      filter.focus();
    } else if (event.key === "Escape" && document.activeElement === filter) {
      filter.value = "";
      filterText = "";
      filter.blur();
      if (lastView) render(lastView);
    }
  });

  const events = new EventSource("/events?token=" + encodeURIComponent(token));
  events.addEventListener("view", (event) => render(JSON.parse(event.data)));
  events.addEventListener("error", () => {
    const connection = $("connection");
    connection.textContent = "page lost its stream; retrying…";
    connection.className = "connection lost";
  });
})();
`

/** The page's style sheet. */
export const APP_CSS = `:root { color-scheme: light dark; --stuck: #d33; --ok: #2a2; --muted: #888; --line: #8884; }
* { box-sizing: border-box; }
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; padding: 0 16px 24px; }
header { display: flex; gap: 12px; align-items: center; position: sticky; top: 0; padding: 8px 0; background: Canvas; border-bottom: 1px solid var(--line); z-index: 1; }
h1 { font-size: 16px; margin: 0; }
h2 { font-size: 14px; margin: 16px 0 6px; }
.muted { color: var(--muted); font-weight: normal; }
#filter { margin-left: auto; padding: 3px 6px; min-width: 16em; }
.connection { padding: 2px 8px; border-radius: 10px; font-weight: 600; }
.connection.connected { background: #2a23; color: var(--ok); }
.connection.connecting { background: #8883; }
.connection.lost { background: #d333; color: var(--stuck); }
.connection.stale { background: #d333; color: var(--stuck); }
.totals { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 10px; }
.total { border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; min-width: 6em; }
.total strong { display: block; font-size: 18px; }
.total span { color: var(--muted); }
.total.stuck { border-color: var(--stuck); color: var(--stuck); }
main { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 0 24px; }
section.wide { grid-column: 1 / -1; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { cursor: pointer; user-select: none; }
tr.stuck td { color: var(--stuck); font-weight: 600; background: #d331; }
tr.refused td { color: #c70; }
.chart { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; }
.chart svg { display: block; color: CanvasText; }
.chart .lane-name { fill: currentColor; }
.chart .arrow text:not(.time) { fill: currentColor; }
.chart .arrow.message { color: #37c; }
.chart .arrow.ask { color: #93c; }
.chart .arrow.reply { color: #2a2; }
.chart .arrow.refused { color: #c70; }
.chart .arrow.stuck { color: var(--stuck); font-weight: 700; }
`
