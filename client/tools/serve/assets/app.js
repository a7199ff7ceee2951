// docket dashboard: a single page over /api/. Pages are hash routes
// (#/overview, #/tasks, #/task/<run_id>, #/poisoned, #/schedules); the current
// page polls its endpoint every 2 s. Text from the database is only ever set as
// textContent, never parsed as HTML.
"use strict";

const state = { session: null, timer: null, chart: null, route: null, busy: false, skew: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  let body = null;
  try { body = await response.json(); } catch (e) { body = { error: "bad_response", message: String(e) }; }
  if (!response.ok) {
    const error = new Error(body.message || body.error || response.statusText);
    error.sqlstate = body.sqlstate;
    error.status = response.status;
    throw error;
  }
  return body;
}

async function act(path, body, done) {
  try {
    const result = await api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Docket-CSRF": state.session.csrf_token },
      body: JSON.stringify(body || {}),
    });
    flash(done(result), false);
    refresh();
  } catch (e) {
    flash((e.sqlstate ? "refused by the database (SQLSTATE " + e.sqlstate + "): " : "failed: ") + e.message, true);
  }
}

function flash(text, isError) {
  const box = document.getElementById("flash");
  box.textContent = text;
  box.className = isError ? "error" : "";
  box.hidden = false;
}

// Ages are measured on the database's clock (docket.now()), not the browser's.
function age(iso, now) {
  if (!iso) return "-";
  const ms = (now ? Date.parse(now) : Date.now() + state.skew) - Date.parse(iso);
  const s = Math.round(Math.abs(ms) / 1000);
  const text = s < 60 ? s + " s" : s < 3600 ? Math.round(s / 60) + " min" : s < 86400 ?
    Math.round(s / 3600) + " h" : Math.round(s / 86400) + " d";
  return ms >= 0 ? text + " ago" : "in " + text;
}

function time(iso, now) {
  return iso ? el("span", { title: iso }, age(iso, now)) : "-";
}

function badge(value) {
  return el("span", { class: "state state-" + value }, value);
}

function json(value) {
  return el("pre", {}, value === undefined ? "null" : JSON.stringify(value, null, 2));
}

function table(id, columns, rows, rowClass, cells) {
  return el("table", { id },
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { class: c.num ? "num" : null }, c.label)))),
    el("tbody", {}, rows.length ? rows.map((row) => el("tr", { class: rowClass, "data-key": row.key },
      cells(row).map((cell, i) => el("td", { class: columns[i].num ? "num" : null }, cell)))) :
      el("tr", { class: "empty" }, el("td", { colspan: columns.length, class: "muted" }, "nothing here"))));
}

function replace(id, node) {
  const old = document.getElementById(id);
  if (old) old.replaceWith(node);
}

// --- pages ----------------------------------------------------------------------

const pages = {
  overview: {
    build() {
      return [el("h1", {}, "Queues"), el("table", { id: "queues" }),
        el("h2", {}, "Completions and failures per minute, last hour"),
        el("div", { class: "card chart-box" }, el("canvas", { id: "throughput", "aria-label": "throughput chart" })),
        state.session.actions ? emitForm() : null];
    },
    async load() {
      const data = await api("/api/overview");
      const columns = [{ label: "queue" }, { label: "due", num: 1 }, { label: "scheduled", num: 1 },
        { label: "running", num: 1 }, { label: "waiting", num: 1 }, { label: "poisoned", num: 1 },
        { label: "oldest due", num: 1 }, { label: "done/min", num: 1 }, { label: "failed/min", num: 1 }];
      const rows = data.queues.map((q) => Object.assign({ key: q.queue }, q));
      replace("queues", table("queues", columns, rows, "queue-row", (q) => [
        el("a", { href: "#/tasks?queue=" + encodeURIComponent(q.queue) }, q.queue), q.due, q.scheduled,
        q.running, q.waiting, q.poisoned ? el("a", { href: "#/poisoned" }, q.poisoned) : 0,
        q.oldest_due_at ? el("span", { title: q.oldest_due_at }, age(q.oldest_due_at, data.now).replace(" ago", "")) : "-",
        q.completed_last_minute, q.failed_last_minute]));
      drawChart(data.series);
    },
  },
  tasks: {
    build(params) {
      const filters = el("form", { class: "filters", id: "task-filters", onsubmit: (e) => {
        e.preventDefault();
        const form = new FormData(e.target);
        const query = new URLSearchParams();
        for (const key of ["queue", "state", "name"]) if (form.get(key)) query.set(key, form.get(key));
        location.hash = "#/tasks" + (query.toString() ? "?" + query : "");
      } },
      el("label", {}, "queue", el("input", { name: "queue", value: params.get("queue") || "" })),
      el("label", {}, "state", el("select", { name: "state" }, ["", "pending", "running", "sleeping", "waiting",
        "poisoned", "completed", "failed", "cancelled"].map((s) =>
        el("option", { value: s, selected: params.get("state") === s }, s || "any")))),
      el("label", {}, "task name", el("input", { name: "name", value: params.get("name") || "" })),
      el("button", { class: "primary", type: "submit" }, "Filter"));
      return [el("h1", {}, "Tasks"), filters, el("div", { id: "tasks" }), el("div", { class: "pager", id: "pager" })];
    },
    async load(params) {
      const query = new URLSearchParams();
      for (const key of ["queue", "state", "name", "after"])
        if (params.get(key)) query.set(key, params.get(key));
      query.set("limit", "50");
      const page = await api("/api/tasks?" + query);
      const rows = page.entries.map((t) => Object.assign({ key: t.run_id }, t));
      replace("tasks", table("tasks", [{ label: "run id" }, { label: "task" }, { label: "queue" },
        { label: "state" }, { label: "attempts", num: 1 }, { label: "started" }, { label: "updated" }],
      rows, "task-row", (t) => [el("a", { href: "#/task/" + encodeURIComponent(t.run_id) }, t.run_id),
        t.task_name, t.queue, badge(t.state), t.attempts, time(t.started_at), time(t.updated_at)]));
      const pager = el("div", { class: "pager", id: "pager" });
      if (params.get("after")) {
        const first = new URLSearchParams(params);
        first.delete("after");
        pager.append(el("a", { href: "#/tasks?" + first }, "« newest"));
      }
      if (page.has_more) {
        const next = new URLSearchParams(params);
        next.set("after", page.next_after);
        pager.append(el("a", { href: "#/tasks?" + next, id: "next-page" }, "older »"));
      }
      replace("pager", pager);
    },
  },
  task: {
    build() {
      return [el("div", { id: "task" })];
    },
    async load(params, runId) {
      const t = await api("/api/tasks/" + encodeURIComponent(runId));
      const finished = ["completed", "failed", "cancelled"].includes(t.state);
      const actions = state.session.actions && !finished ?
        el("button", { class: "danger", id: "cancel-task", onclick: () => {
          const reason = prompt("Cancel " + t.run_id + "? Reason:", "cancelled from the dashboard");
          if (reason !== null) act("/api/tasks/" + encodeURIComponent(t.run_id) + "/cancel", { reason },
            (r) => r.cancelled ? "cancelled " + r.run_id : r.run_id + " had already finished");
        } }, "Cancel task") : null;
      const retry = state.session.actions && t.state === "poisoned" ? retryButton(t.run_id) : null;
      const facts = [["state", badge(t.state)], ["task", t.task_name], ["queue", t.queue],
        ["tenant", t.tenant_id === null ? "(tenantless)" : t.tenant_id], ["attempts", t.attempts + " of " + t.max_attempts],
        ["started", time(t.started_at)], ["updated", time(t.updated_at)], ["wakes", time(t.wake_at)],
        ["claimed", time(t.claimed_at)], ["claim attempts", t.claim_attempts],
        ["poisoned", t.poisoned_at ? t.poison_reason + " (" + age(t.poisoned_at) + ")" : "-"]];
      replace("task", el("div", { id: "task" },
        el("h1", {}, "Task ", el("code", {}, t.run_id), " ", actions, " ", retry),
        el("div", { class: "grid" },
          el("div", { class: "card" }, el("table", { id: "task-facts" }, el("tbody", {},
            facts.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))))),
          el("div", { class: "card" }, el("h2", {}, "Params"), json(t.params), el("h2", {}, "Headers"), json(t.headers)),
          el("div", { class: "card" }, el("h2", {}, "Result"), json(t.result),
            t.error ? [el("h2", {}, "Error"), json(t.error)] : null)),
        el("h2", {}, "Attempt errors"),
        t.attempt_errors.length ? el("ol", { id: "attempt-errors" }, t.attempt_errors.map((a) =>
          el("li", { class: "attempt-error" }, "attempt " + a.attempt + " ", time(a.recorded_at), json(a.error)))) :
          el("p", { class: "muted", id: "attempt-errors" }, "no failed attempts"),
        el("h2", {}, "Completed steps"),
        table("steps", [{ label: "step" }, { label: "value" }, { label: "completed" }],
          t.steps.map((s) => Object.assign({ key: s.step_name }, s)), "step-row",
          (s) => [s.step_name, json(s.value), time(s.completed_at)]),
        el("h2", {}, "History"),
        el("ol", { class: "timeline", id: "timeline" }, t.history.map((h) =>
          el("li", { class: "timeline-entry type-" + h.type, "data-type": h.type },
            el("strong", {}, h.type), el("span", { class: "when", title: h.recorded_at }, h.recorded_at),
            h.payload !== null && Object.keys(h.payload || {}).length ? json(h.payload) : null))),
        t.history_has_more ? el("p", { class: "muted" }, "older entries: /api/tasks/" + t.run_id + "/history") : null));
    },
  },
  poisoned: {
    build() {
      return [el("h1", {}, "Poisoned runs"),
        el("p", { class: "muted" }, "Runs whose claims kept expiring or were handed back too often. " +
          "Retrying makes a run due again with fresh counters."), el("div", { id: "poisoned" })];
    },
    async load() {
      const data = await api("/api/poisoned");
      const rows = data.entries.map((r) => Object.assign({ key: r.run_id }, r));
      const columns = [{ label: "run id" }, { label: "task" }, { label: "queue" }, { label: "reason" },
        { label: "poisoned" }, { label: "claims", num: 1 }];
      if (state.session.actions) columns.push({ label: "" });
      replace("poisoned", table("poisoned", columns, rows, "poisoned-row", (r) => [
        el("a", { href: "#/task/" + encodeURIComponent(r.run_id) }, r.run_id), r.graph_id, r.queue,
        r.poison_reason, time(r.poisoned_at), r.claim_attempts,
        state.session.actions ? retryButton(r.run_id) : undefined].filter((c) => c !== undefined)));
    },
  },
  schedules: {
    build() {
      return [el("h1", {}, "Schedules"), el("div", { id: "schedules" })];
    },
    async load() {
      const data = await api("/api/schedules");
      const rows = data.entries.map((s) => Object.assign({ key: s.schedule_name }, s));
      replace("schedules", table("schedules", [{ label: "schedule" }, { label: "cron" }, { label: "task" },
        { label: "queue" }, { label: "owner" }, { label: "next run" }], rows, "schedule-row", (s) => [
        s.schedule_name, el("code", {}, s.cron), s.task_name, s.queue, s.owner_scope, time(s.next_run_at)]));
    },
  },
};

function retryButton(runId) {
  return el("button", { class: "retry", onclick: () => act("/api/poisoned/" + encodeURIComponent(runId) + "/retry",
    {}, (r) => "retried " + r.run_id + ": due now") }, "Retry");
}

function emitForm() {
  return el("form", { class: "card filters", id: "emit-form", onsubmit: (e) => {
    e.preventDefault();
    const form = new FormData(e.target);
    let payload = null;
    try { payload = form.get("payload") ? JSON.parse(form.get("payload")) : null; } catch (err) {
      flash("the payload is not JSON: " + err.message, true);
      return;
    }
    const body = { name: form.get("name"), payload };
    if (form.get("scope")) body.scope = form.get("scope");
    act("/api/events", body, (r) => (r.emitted ? "emitted " : "already emitted (unchanged): ") + r.event);
  } },
  el("label", {}, "event", el("input", { name: "name", required: true })),
  el("label", {}, "payload (JSON)", el("input", { name: "payload", placeholder: "{}" })),
  state.session.scope === "system" ? el("label", {}, "owner scope", el("input", { name: "scope", placeholder: "tenantless" })) : null,
  el("button", { class: "primary", type: "submit" }, "Emit event"));
}

function drawChart(series) {
  const canvas = document.getElementById("throughput");
  if (!canvas) return;
  const labels = series.points.map((p) => p.at.slice(11, 16));
  const completed = series.points.map((p) => p.completed);
  const failed = series.points.map((p) => p.failed);
  if (typeof Chart === "undefined") return;  // the canvas stays, empty
  if (state.chart && state.chart.canvas === canvas) {
    state.chart.data.labels = labels;
    state.chart.data.datasets[0].data = completed;
    state.chart.data.datasets[1].data = failed;
    state.chart.update("none");
    return;
  }
  state.chart = new Chart(canvas, {
    type: "line",
    data: { labels, datasets: [
      { label: "completed", data: completed, borderColor: "#1f8a4c", backgroundColor: "#1f8a4c", tension: 0.2 },
      { label: "failed", data: failed, borderColor: "#c23b3b", backgroundColor: "#c23b3b", tension: 0.2 }] },
    options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
  });
}

// --- routing and polling ---------------------------------------------------------

function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, "") || "overview";
  const [path, query] = hash.split("?");
  const parts = path.split("/");
  return { name: parts[0] in pages ? parts[0] : "overview", arg: parts.slice(1).map(decodeURIComponent).join("/"),
    params: new URLSearchParams(query || "") };
}

async function refresh() {
  const route = state.route;
  if (!route || state.busy) return;
  state.busy = true;
  try {
    await pages[route.name].load(route.params, route.arg);
    if (route === state.route) document.body.setAttribute("data-loaded", route.name);
  } catch (e) {
    flash("could not load: " + e.message, true);
    document.body.setAttribute("data-error", e.message);
  } finally {
    state.busy = false;
  }
}

function navigate() {
  state.route = parseRoute();
  state.chart = null;
  document.body.removeAttribute("data-loaded");
  for (const a of document.querySelectorAll("nav a"))
    a.classList.toggle("active", a.dataset.nav === (state.route.name === "task" ? "tasks" : state.route.name));
  const app = document.getElementById("app");
  app.replaceChildren(...pages[state.route.name].build(state.route.params, state.route.arg).filter(Boolean));
  refresh();
}

async function start() {
  try {
    state.session = await api("/api/session");
    state.skew = Date.parse(state.session.now) - Date.now();
  } catch (e) {
    flash("cannot reach the dashboard's API: " + e.message, true);
    return;
  }
  document.getElementById("session").textContent = "scope " + state.session.scope +
    " · schema " + state.session.schema_version + " · actions " + (state.session.actions ? "on" : "off");
  window.addEventListener("hashchange", navigate);
  navigate();
  state.timer = setInterval(refresh, state.session.poll_interval_ms || 2000);
}

start();
