// The mcpgen MCP App (MCP Apps extension, spec 2026-01-26): draws one tool result that the host pushes.
// It talks the extension's JSON-RPC over postMessage itself (a few messages; the App SDK would triple
// the resource's size). Every value from a result is untrusted: it reaches the page only as text
// (textContent), as an http(s) link target, or as Chart.js data drawn on a canvas; never as HTML.
"use strict";
(() => {
  const PROTOCOL_VERSION = "2026-01-26";
  const settings = JSON.parse(document.getElementById("mcpgen-settings").textContent);
  const root = document.documentElement;
  const main = document.getElementById("answer");
  let host = {}; // the host context, merged with each host-context-changed
  let last = null; // the last tool result, redrawn when the theme changes
  let sort = { column: -1, descending: false };

  // ---- JSON-RPC over postMessage, with the host only -----------------------------------------
  let nextId = 1;
  const pending = new Map();
  const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  const notify = (method, params) => send({ method, params: params || {} });
  function request(method, params) {
    const id = nextId++;
    send({ id, method, params: params || {} });
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }
  const handlers = {
    "ui/notifications/tool-result": (params) => { last = params; sort = { column: -1, descending: false }; draw(); },
    "ui/notifications/tool-cancelled": (params) => {
      last = null;
      main.replaceChildren(errorBox("The call was cancelled", (params && params.reason) || ""));
    },
    "ui/notifications/host-context-changed": (params) => { applyContext(params || {}); if (last) draw(); },
  };
  const requests = {
    ping: () => ({}),
    "ui/resource-teardown": () => { destroyCharts(); return {}; },
  };
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return; // only the host speaks to us
    const msg = event.data;
    if (!msg || msg.jsonrpc !== "2.0") return;
    if (msg.method === undefined && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(String(msg.error.message || "error"))); else resolve(msg.result || {});
    } else if (typeof msg.method === "string" && msg.id !== undefined) {
      const handle = requests[msg.method];
      send(handle ? { id: msg.id, result: handle(msg.params) }
        : { id: msg.id, error: { code: -32601, message: "Method not found: " + msg.method } });
    } else if (typeof msg.method === "string" && handlers[msg.method]) {
      handlers[msg.method](msg.params);
    }
  });

  // ---- host context: theme, styles, display mode, container --------------------------------------
  function applyContext(changes) {
    host = { ...host, ...changes };
    const theme = settings.theme === "auto" ? host.theme : settings.theme;
    if (theme === "light" || theme === "dark") root.dataset.theme = theme; else delete root.dataset.theme;
    const variables = (host.styles && host.styles.variables) || {};
    for (const [name, value] of Object.entries(variables)) {
      // A theme fixed by the spec keeps its own colours; fonts, sizes and radii still follow the host.
      if (settings.theme !== "auto" && name.startsWith("--color-")) continue;
      if (/^--[a-z0-9-]+$/.test(name) && typeof value === "string") root.style.setProperty(name, value);
    }
    root.dataset.display = host.displayMode || "inline";
    const box = host.containerDimensions || {};
    root.style.height = "height" in box ? "100vh" : "";
    root.style.maxHeight = box.maxHeight ? box.maxHeight + "px" : "";
  }

  function reportSize() {
    let sent = "";
    const report = () => {
      // The <html> box, not scrollHeight: that is never less than the frame, so a frame would never shrink.
      const rect = root.getBoundingClientRect();
      const size = { width: Math.ceil(rect.width), height: Math.ceil(rect.height) };
      const key = size.width + "x" + size.height;
      if (key !== sent) { sent = key; notify("ui/notifications/size-changed", size); }
    };
    new ResizeObserver(report).observe(document.body);
    report();
  }

  // ---- drawing one result --------------------------------------------------------------------
  // h("p", {class: "x"}, "text", child): an element whose string children become text nodes.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
    for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
    return el;
  }
  const plural = (n, word) => `${n.toLocaleString(locale())} ${word}${n === 1 ? "" : "s"}`;
  const locale = () => host.locale || undefined;
  const proseOf = (result) => (Array.isArray(result.content) ? result.content : [])
    .filter((c) => c && c.type === "text").map((c) => String(c.text)).join("\n");

  function errorBox(title, text) {
    return h("section", { class: "error", role: "alert" }, h("h2", {}, title), h("p", {}, text));
  }

  function destroyCharts() {
    if (!window.Chart) return;
    for (const canvas of main.querySelectorAll("canvas")) { const c = Chart.getChart(canvas); if (c) c.destroy(); }
  }

  function draw() {
    destroyCharts();
    const result = last || {};
    if (result.isError) {
      main.replaceChildren(errorBox("The tool could not answer", proseOf(result) || "(no message)"));
      return;
    }
    const data = result.structuredContent && typeof result.structuredContent === "object" ? result.structuredContent : {};
    const parts = [];
    if (typeof data.force === "string" && data.force.trim()) parts.push(h("p", { class: "force" }, data.force));
    const table = Array.isArray(data.table) && data.table.length ? data.table : null;
    const rows = table ? table.length - 1 : null;
    const charts = (Array.isArray(data.charts) ? data.charts : []).filter(hasData);
    if (rows) parts.push(drawTable(table, result));
    else if (!charts.length) parts.push(h("p", { class: "empty" }, proseOf(result) || "No rows matched."));
    const boxes = charts.map(() => h("div", { class: "chart" }, h("canvas", { role: "img" })));
    parts.push(...boxes);
    if (charts.length && settings.chartjs === "cdn") {
      parts.push(h("p", { class: "note cdn" }, "Chart.js comes from cdn.jsdelivr.net: this mcpgen install could not " +
        "fetch it when it was built, so hosts that refuse that site draw no charts."));
    }
    const sources = Array.isArray(data.sources) ? data.sources.map(String) : [];
    if (sources.length) {
      parts.push(h("p", { class: "sources-title" }, sources.length === 1 ? "Source" : "Sources"),
        h("ul", { class: "sources" }, sources.map((url) => h("li", {}, link(url)))));
    }
    const truncated = result._meta && result._meta["mcpgen/truncated"];
    if (rows !== null) {
      parts.push(h("p", { class: "stats" }, h("span", { class: "rows" }, plural(rows, "row")),
        truncated ? h("span", { class: "note" },
          ` · only the first ${Number(truncated.max_rows || rows).toLocaleString(locale())} are shown; the query matched more`)
          : null));
    }
    if ((host.availableDisplayModes || []).includes("fullscreen")) parts.unshift(toolbar());
    main.replaceChildren(...parts);
    charts.forEach((config, i) => drawChart(boxes[i], config));
  }

  function toolbar() {
    const full = host.displayMode === "fullscreen";
    const button = h("button", { type: "button" }, full ? "Exit full screen" : "Full screen");
    button.addEventListener("click", () => {
      request("ui/request-display-mode", { mode: full ? "inline" : "fullscreen" })
        .then((r) => { applyContext({ displayMode: r.mode }); draw(); }).catch(() => {});
    });
    return h("p", { class: "toolbar" }, button);
  }

  function link(url) {
    if (!/^https?:\/\//i.test(url)) return url; // anything else stays text
    const a = h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url);
    a.addEventListener("click", (event) => {
      event.preventDefault(); // the host opens links (ui/open-link); a sandboxed frame may not
      request("ui/open-link", { url }).catch(() => {});
    });
    return a;
  }

  // Numbers: right-aligned, in the one format the server chose for their column (result._meta
  // "mcpgen/formats": decimals and grouping), written in the host's locale. Without one, as sent.
  function numberFormats(result, count) {
    const formats = result._meta && Array.isArray(result._meta["mcpgen/formats"]) ? result._meta["mcpgen/formats"] : [];
    return Array.from({ length: count }, (_, i) => {
      const f = formats[i];
      if (!f || !Number.isInteger(f.decimals) || f.decimals < 0 || f.decimals > 20) return null;
      return new Intl.NumberFormat(locale(), { minimumFractionDigits: f.decimals, maximumFractionDigits: f.decimals,
        useGrouping: f.grouping ? undefined : false }); // undefined: the locale's own grouping
    });
  }
  const cellText = (value, format) => (value === null || value === undefined ? ""
    : typeof value === "number" && format ? format.format(value) : String(value));

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1; // empty cells last either way
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), locale(), { numeric: true });
  }

  function drawTable(table, result) {
    const [header, ...body] = table;
    const names = (Array.isArray(header) ? header : []).map((v) => cellText(v, null));
    const formats = numberFormats(result, names.length);
    const numeric = names.map((_, i) => body.some((r) => typeof r[i] === "number") &&
      body.every((r) => r[i] === null || typeof r[i] === "number"));
    const rows = body.slice();
    if (sort.column >= 0 && sort.column < names.length) {
      const i = sort.column, sign = sort.descending ? -1 : 1;
      rows.sort((a, b) => {
        const c = compare(a[i], b[i]);
        return a[i] === null || b[i] === null ? c : sign * c;
      });
    }
    const th = names.map((name, i) => {
      const state = sort.column === i ? (sort.descending ? "descending" : "ascending") : "none";
      const button = h("button", { type: "button", title: "Sort by " + name }, name,
        h("span", { class: "arrow", "aria-hidden": "true" }, state === "ascending" ? "▲" : state === "descending" ? "▼" : ""));
      button.addEventListener("click", () => {
        sort = { column: i, descending: sort.column === i ? !sort.descending : numeric[i] };
        draw();
      });
      return h("th", { scope: "col", class: numeric[i] ? "num" : null, "aria-sort": state }, button);
    });
    const tr = rows.map((row) => h("tr", {}, names.map((_, i) => {
      const v = Array.isArray(row) ? row[i] : undefined;
      const kind = v === null || v === undefined ? "null" : typeof v === "number" ? "num" : null;
      return h("td", { class: kind, title: typeof v === "number" ? String(v) : null }, cellText(v, formats[i]));
    })));
    return h("div", { class: "table", tabindex: "0" }, h("table", {}, h("thead", {}, h("tr", {}, th)), h("tbody", {}, tr)));
  }

  // ---- charts ----------------------------------------------------------------------------------
  const hasData = (config) => config && config.data && Array.isArray(config.data.datasets) &&
    config.data.datasets.some((d) => d && Array.isArray(d.data) && d.data.length);

  // A theme colour as canvas understands it (custom properties may hold var() and light-dark()).
  function colour(variable) {
    const probe = h("span", { hidden: "" });
    probe.style.color = `var(${variable})`;
    document.body.append(probe);
    const value = getComputedStyle(probe).color;
    probe.remove();
    return value;
  }

  function drawChart(box, config) {
    const canvas = box.querySelector("canvas");
    if (typeof window.Chart === "undefined") {
      box.replaceWith(h("p", { class: "note" }, "Chart.js did not load, so this chart cannot be drawn."));
      return;
    }
    try {
      // Text and grid follow the theme; dataset colours stay with Chart.js's own palette.
      Chart.defaults.color = colour("--muted");
      Chart.defaults.scale.grid.color = Chart.defaults.scale.border.color = colour("--line");
      Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
      const copy = JSON.parse(JSON.stringify(config)); // plain data only: no functions reach Chart.js
      copy.options = { ...(copy.options || {}), responsive: true, maintainAspectRatio: false };
      const title = copy.options.plugins && copy.options.plugins.title && copy.options.plugins.title.text;
      canvas.setAttribute("aria-label", String(title || "chart"));
      new Chart(canvas, copy);
    } catch (e) {
      box.replaceWith(h("p", { class: "note" }, "This chart cannot be drawn: " + String(e && e.message || e)));
    }
  }

  // ---- start -----------------------------------------------------------------------------------
  root.style.setProperty("--chart-height", settings.chartHeight + "px");
  applyContext({});
  request("ui/initialize", {
    protocolVersion: PROTOCOL_VERSION,
    appInfo: { name: "mcpgen", version: settings.version },
    appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] },
  }).then((init) => {
    applyContext(init.hostContext || {});
    notify("ui/notifications/initialized", {});
    reportSize();
  }).catch((e) => main.replaceChildren(errorBox("The host did not start the app", String(e.message || e))));
})();
