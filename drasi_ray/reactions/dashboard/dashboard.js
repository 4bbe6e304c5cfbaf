// drasi_ray's dashboard: every query's result set as a table, live, from the SSE reaction's
// /events stream (drasi_ray/reactions/sse.py says what its events hold).
//
// Every value reaches the page through textContent or an SVG text node's textContent, never
// as markup: a property holding "<script>" is shown as those characters. The page's
// Content-Security-Policy allows no inline script besides.
"use strict";

(function () {
  const DELETED_LINGER_MS = 1200;
  const CHART_BARS = 12;
  const cards = new Map(); // query id -> card state
  const status = { events: 0, sequences: {} };
  window.drasiDashboard = status; // read by tests and the latency benchmark

  const $ = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  function valueText(value) {
    if (value === null || value === undefined) return "null";
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  function fillCell(cell, value) {
    cell.textContent = valueText(value);
    cell.className = value === null || value === undefined ? "null"
      : typeof value === "number" ? "number" : "";
  }

  function card(query) {
    let state = cards.get(query.id);
    if (state) return state;
    const root = $("section", "query");
    root.dataset.query = query.id;
    root.appendChild($("h2", "", query.id));
    const meta = $("div", "meta");
    const count = $("span", "count", "0");
    const changed = $("span", "changed", "no change yet");
    meta.append(count, " rows · last change: ", changed);
    root.appendChild(meta);
    const chart = query.aggregating ? root.appendChild($("div", "chart")) : null;
    const table = root.appendChild($("table"));
    const head = table.appendChild($("thead")).appendChild($("tr"));
    for (const column of query.columns) head.appendChild($("th", "", column));
    const body = table.appendChild($("tbody"));
    document.getElementById("empty")?.remove();
    document.getElementById("queries").appendChild(root);
    state = { query, root, count, changed, chart, body, rows: new Map() };
    cards.set(query.id, state);
    return state;
  }

  function rowElement(state, key, row) {
    const tr = $("tr");
    tr.dataset.key = String(key);
    for (const column of state.query.columns) {
      const td = tr.appendChild($("td"));
      td.dataset.column = column;
      fillCell(td, row[column]);
    }
    return tr;
  }

  function flash(tr, className) {
    // Alternate between two classes of the same animation: a changed animation name restarts
    // it without forcing a layout (a forced layout per change is slow at 1,000 changes/s).
    const again = tr.classList.contains(className) ? `${className}-again` : className;
    tr.classList.remove("row-added", "row-added-again", "row-updated", "row-updated-again");
    tr.classList.add(again);
  }

  function applyChange(state, change) {
    const existing = state.rows.get(change.key);
    if (change.op === "delete") {
      if (!existing) return;
      state.rows.delete(change.key);
      existing.tr.classList.add("row-deleted");
      existing.tr.dataset.deleted = "true";
      setTimeout(() => existing.tr.remove(), DELETED_LINGER_MS);
      return;
    }
    if (change.op === "update" && existing) {
      existing.row = change.row;
      existing.tr.querySelectorAll("td").forEach((td) => fillCell(td, change.row[td.dataset.column]));
      flash(existing.tr, "row-updated");
      return;
    }
    const tr = rowElement(state, change.key, change.row);
    state.rows.set(change.key, { row: change.row, tr });
    state.body.appendChild(tr);
    flash(tr, "row-added");
  }

  function refresh(state, sequence, lastChangeMs) {
    state.count.textContent = String(state.rows.size);
    state.changed.textContent = lastChangeMs ? new Date(lastChangeMs).toLocaleTimeString() : "no change yet";
    state.root.dataset.sequence = String(sequence);
    status.sequences[state.query.id] = sequence;
    if (state.chart) drawChart(state);
  }

  function drawChart(state) {
    const query = state.query;
    const measure = query.columns.find((c) => !query.groupingKeys.includes(c));
    const bars = [...state.rows.values()].slice(0, CHART_BARS).map(({ row }) => ({
      label: query.groupingKeys.map((k) => valueText(row[k])).join(" / ") || query.id,
      value: typeof row[measure] === "number" ? row[measure] : 0,
    }));
    const ns = "http://www.w3.org/2000/svg";
    const width = 380, rowHeight = 18;
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(Math.max(1, bars.length) * rowHeight));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", `${measure} by ${query.groupingKeys.join(", ")}`);
    const top = Math.max(1, ...bars.map((b) => Math.abs(b.value)));
    bars.forEach((bar, i) => {
      const label = document.createElementNS(ns, "text");
      label.setAttribute("x", "0");
      label.setAttribute("y", String(i * rowHeight + 13));
      label.textContent = bar.label.slice(0, 18);
      const rect = document.createElementNS(ns, "rect");
      rect.setAttribute("x", "130");
      rect.setAttribute("y", String(i * rowHeight + 3));
      rect.setAttribute("height", "12");
      rect.setAttribute("width", String(Math.round((Math.abs(bar.value) / top) * (width - 200))));
      const value = document.createElementNS(ns, "text");
      value.setAttribute("x", String(136 + Math.round((Math.abs(bar.value) / top) * (width - 200))));
      value.setAttribute("y", String(i * rowHeight + 13));
      value.textContent = valueText(bar.value);
      svg.append(label, rect, value);
    });
    state.chart.replaceChildren(svg);
  }

  function onQueries(queries) {
    for (const query of queries) card(query);
  }

  function onSnapshot(data) {
    const state = cards.get(data.queryId);
    if (!state) return;
    state.rows.clear();
    const fresh = data.rows.map(([key, row]) => {
      const tr = rowElement(state, key, row);
      state.rows.set(key, { row, tr });
      return tr;
    });
    state.body.replaceChildren(...fresh);
    refresh(state, data.sequence, data.lastChangeMs);
  }

  function onDiff(data) {
    const state = cards.get(data.queryId);
    if (!state) return;
    for (const change of data.changes) applyChange(state, change);
    refresh(state, data.sequence, data.timeMs);
    document.dispatchEvent(new CustomEvent("drasi:diff", { detail: { ...data, receivedMs: Date.now() } }));
  }

  function handler(callback) {
    return (event) => {
      status.events += 1;
      callback(JSON.parse(event.data));
    };
  }

  const connection = document.getElementById("connection");
  const source = new EventSource("/events");
  source.addEventListener("open", () => {
    connection.textContent = "live";
    connection.className = "connection live";
  });
  source.addEventListener("error", () => {
    connection.textContent = "reconnecting";
    connection.className = "connection connecting";
  });
  source.addEventListener("queries", handler(onQueries));
  source.addEventListener("snapshot", handler(onSnapshot));
  source.addEventListener("diff", handler(onDiff));
})();
