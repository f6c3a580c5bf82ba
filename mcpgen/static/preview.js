// mcpgen preview: forms from each tool's inputSchema; each answer drawn by the tool's MCP App, in a
// sandboxed iframe wired as a host wires it. Every value from a tool is untrusted: on this page it only
// ever appears as text (textContent), never as HTML.
"use strict";

const state = { version: null, tools: [], prompts: [], current: null, toolJson: null };
const $ = (sel) => document.querySelector(sel);

// h("div", {class: "x"}, "text", child): an element; strings become text nodes.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const show = (v) => (typeof v === "string" ? v : JSON.stringify(v));
const clock = (t) => (t ? new Date(t * 1000).toLocaleTimeString() : "");

async function getJson(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

// ---- tool list, problems, reload ---------------------------------------------------------------

async function loadTools() {
  const data = await getJson("/api/tools");
  state.version = data.version;
  state.tools = data.tools;
  state.prompts = data.prompts || [];
  renderProblems(data);
  renderServer(data.server);
  renderToolList();
  renderPromptList();
  const n = data.tools.length;
  $("#status").textContent = `${n} tool${n === 1 ? "" : "s"} from ${data.specs_dir}` +
    (data.checked_at ? ` · specs read at ${clock(data.checked_at)}` : "");
  const wanted = decodeURIComponent(location.hash.slice(1)) || (state.current ? state.current : "");
  const prompt = wanted.startsWith("prompt:") && state.prompts.find((p) => "prompt:" + p.name === wanted);
  if (prompt) { if (state.current !== wanted) selectPrompt(prompt); return; }
  const tool = data.tools.find((t) => t.name === wanted) || data.tools[0];
  if (!tool) { $("#tool").replaceChildren(h("p", { class: "hint" }, "No tools are loaded.")); state.current = null; return; }
  const json = JSON.stringify(tool);
  if (tool.name === state.current && json === state.toolJson) {
    const old = $("#result .answer");
    if (old && Number(old.dataset.version) !== data.version) old.classList.add("outdated");
    return; // same tool, same schema: keep what the user typed and the last answer
  }
  selectTool(tool);
}

function renderProblems(data) {
  const box = $("#problems");
  box.replaceChildren();
  if (data.errors.length) {
    box.append(h("h2", {}, `The specs have ${data.errors.length} error${data.errors.length === 1 ? "" : "s"}; ` +
      "mcpgen serve would refuse to start."));
    box.append(h("ul", { class: "errors" }, data.errors.map((p) => h("li", {}, h("code", {}, p.text)))));
    if (data.stale) box.append(h("p", {}, `The tools below are the last set that loaded (at ${clock(data.loaded_at)}); ` +
      "fix the files and the page reloads by itself."));
  }
  if (data.warnings.length) {
    box.append(h("details", { class: "warnings" },
      h("summary", {}, `${data.warnings.length} warning${data.warnings.length === 1 ? "" : "s"}`),
      h("ul", {}, data.warnings.map((p) => h("li", {}, h("code", {}, p.text))))));
  }
  box.hidden = !box.childElementCount;
  box.className = data.errors.length ? "bad" : "";
}

// An icon as a host shows it. data: icons are drawn; others would be fetched from elsewhere, which this
// page never does, so their address is shown instead.
function icon(icons, cls) {
  const first = (icons || [])[0];
  if (!first) return null;
  if (first.src.startsWith("data:image/")) return h("img", { class: cls, src: first.src, alt: "", width: 20, height: 20 });
  return h("span", { class: cls + " remote", title: first.src }, "🔗");
}

// What a client reads when it connects: the server's icon and instructions (mcpgen.yaml's, else a summary).
function renderServer(server) {
  const box = $("#server");
  box.replaceChildren();
  box.hidden = !server;
  if (!server) return;
  box.append(h("details", {},
    h("summary", {}, icon(server.icons, "server-icon"), "What a client is told about this server"),
    h("p", { class: "instructions" }, server.instructions),
    (server.icons || []).length
      ? h("p", { class: "hint" }, "Icons: ", server.icons.map((i) => i.src.startsWith("data:") ? `inline ${i.mimeType || "image"}` : i.src).join(", "))
      : h("p", { class: "hint" }, "No icons: set icons: in mcpgen.yaml.")));
}

function renderToolList() {
  const nav = $("#tools");
  nav.replaceChildren(h("ul", {}, state.tools.map((t) =>
    h("li", {}, h("a", {
      href: "#" + encodeURIComponent(t.name), "data-tool": t.name,
      class: t.name === state.current ? "current" : null,
    }, icon(t.icons, "tool-icon"), h("strong", {}, t.title || t.name), t.title ? h("code", {}, t.name) : null)))));
}

// ---- prompts: what a client offers a person to start from -----------------------------------------

function renderPromptList() {
  if (!state.prompts.length) return;
  $("#tools").append(h("h3", {}, "Prompts"), h("ul", { class: "prompts" }, state.prompts.map((p) =>
    h("li", {}, h("a", { href: "#prompt:" + encodeURIComponent(p.name), "data-prompt": p.name },
      h("strong", {}, p.title || p.name), p.title ? h("code", {}, p.name) : null)))));
}

function selectPrompt(prompt) {
  state.current = "prompt:" + prompt.name;
  state.toolJson = null;
  for (const a of document.querySelectorAll("#tools a")) a.classList.toggle("current", a.dataset.prompt === prompt.name);
  const fields = (prompt.arguments || []).map((a) => {
    // Suggestions as a client gets them from completion/complete, for what is typed so far.
    const list = h("datalist", { id: "pcomp-" + a.name });
    const input = h("input", { type: "text", name: a.name, id: "parg-" + a.name, list: "pcomp-" + a.name, autocomplete: "off" });
    return { a, input, list, el: h("label", { class: "field" },
      h("span", { class: "name" }, a.name, a.required ? h("abbr", { title: "required" }, " *") : null),
      input, list, h("small", { class: "help" }, a.description || "")) };
  });
  for (const f of fields) {
    const suggest = async () => {
      const context = {};
      for (const o of fields) if (o !== f && o.input.value !== "") context[o.a.name] = o.input.value;
      const r = await fetch("/api/complete/" + encodeURIComponent(prompt.name), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ argument: f.a.name, value: f.input.value, context }) });
      const out = await r.json();
      f.list.replaceChildren(...(out.values || []).map((v) => h("option", { value: v })));
      f.input.dataset.suggested = String((out.values || []).length);
    };
    f.input.addEventListener("input", suggest);
    f.input.addEventListener("focus", suggest);
  }
  // Not checked in the browser: clients send prompt arguments as text, and the answer shows the server's sentence.
  const form = h("form", { id: "prompt-form", "data-prompt": prompt.name, novalidate: true },
    fields.map((f) => f.el),
    fields.length ? null : h("p", { class: "hint" }, "This prompt takes no arguments."),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Get " + prompt.name)));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const args = {};
    for (const f of fields) if (f.input.value !== "") args[f.a.name] = f.input.value;
    const r = await fetch("/api/prompt/" + encodeURIComponent(prompt.name), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(args) });
    const out = await r.json();
    $("#prompt-result").replaceChildren(out.error
      ? h("p", { class: "error" }, out.error)
      : h("div", { class: "messages" }, out.result.messages.map((m) => h("div", { class: "message" },
          h("strong", {}, m.role + ": "), h("span", { class: "text" }, m.content.text ?? show(m.content))))));
  });
  $("#tool").replaceChildren(
    h("h2", {}, prompt.title || prompt.name),
    h("p", { class: "meta" }, h("code", {}, prompt.name), " · prompt", prompt.source ? ` · ${prompt.source}` : "",
      prompt.tools.length ? ` · leads to ${prompt.tools.join(", ")}` : ""),
    h("p", { class: "description" }, prompt.description || ""),
    form,
    h("div", { id: "prompt-result" }));
}

async function poll() {
  try {
    const { version } = await getJson("/api/version");
    $("body").classList.remove("offline");
    if (version !== state.version) await loadTools();
  } catch (e) {
    $("body").classList.add("offline");
    $("#status").textContent = "the preview server is not answering";
  }
}

window.addEventListener("hashchange", () => {
  const wanted = decodeURIComponent(location.hash.slice(1));
  const prompt = state.prompts.find((p) => "prompt:" + p.name === wanted);
  if (prompt && state.current !== wanted) { selectPrompt(prompt); return; }
  const tool = state.tools.find((t) => t.name === decodeURIComponent(location.hash.slice(1)));
  if (tool && tool.name !== state.current) selectTool(tool);
});

// ---- one tool: header, form, result ------------------------------------------------------------

function selectTool(tool) {
  state.current = tool.name;
  state.toolJson = JSON.stringify(tool);
  for (const a of document.querySelectorAll("#tools a")) a.classList.toggle("current", a.dataset.tool === tool.name);
  const schema = tool.inputSchema || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, prop]) => field(name, prop, required.has(name)));
  const browserCheck = h("input", { type: "checkbox", checked: true, name: "__check" });
  const form = h("form", { id: "form", "data-tool": tool.name },
    fields.map((f) => f.el),
    fields.length ? null : h("p", { class: "hint" }, "This tool takes no arguments."),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Call " + tool.name),
      h("button", { type: "reset" }, "Defaults"),
      h("label", { class: "check" }, browserCheck, " check arguments in the browser")));
  browserCheck.addEventListener("change", () => { form.noValidate = !browserCheck.checked; });
  form.addEventListener("reset", () => setTimeout(() => fields.forEach((f) => f.sync && f.sync()), 0));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    callTool(tool.name, filled(fields), {});
  });
  $("#tool").replaceChildren(
    h("h2", {}, icon(tool.icons, "tool-icon"), tool.title || tool.name),
    h("p", { class: "meta" }, h("code", {}, tool.name), tool.source ? ` · ${tool.source}` : ""),
    h("p", { class: "description" }, tool.description || ""),
    tool.long_running ? h("p", { class: "badge tasks" }, "Long-running: offers tasks (a client of the tasks extension gets a task at once, polls it and fetches the answer later)") : null,
    tool.confirm ? h("p", { class: "badge confirm" }, tool.confirm.when_rows_over === null
      ? "Asks the person to confirm each call: " + tool.confirm.message
      : `Asks the person to confirm a call whose result would have more than ${tool.confirm.when_rows_over} rows: ` + tool.confirm.message) : null,
    form,
    h("div", { id: "result" }));
}

// An optional parameter may be nullable: [type, "null"] (mcpgen) or anyOf with a null branch
// (pydantic's Optional[X] in Python tools). The form shows the non-null type; null = left out.
function plain(prop) {
  if (Array.isArray(prop.type)) {
    const enums = prop.enum ? { enum: prop.enum.filter((v) => v !== null) } : {};
    return { ...prop, ...enums, type: prop.type.find((t) => t !== "null") };
  }
  if (!prop.type && Array.isArray(prop.anyOf)) {
    const branch = prop.anyOf.find((b) => b.type && b.type !== "null");
    if (branch) return { ...branch, ...prop, type: branch.type };
  }
  return prop;
}

function label(name, prop, required) {
  prop = plain(prop);
  return h("span", { class: "name" }, name, required ? h("abbr", { title: "required" }, " *") : null,
    h("span", { class: "type" }, " " + (prop.format || prop.type || "json") +
      (prop.type === "array" && prop.items ? ` of ${prop.items.format || prop.items.type}` : "")));
}

function hints(prop) {
  const bits = [];
  for (const [k, word] of [["minimum", "min"], ["maximum", "max"],
    ["minLength", "min length"], ["maxLength", "max length"], ["minItems", "min items"], ["maxItems", "max items"],
    ["pattern", "pattern"]]) {
    if (prop[k] !== undefined) bits.push(`${word} ${prop[k]}`);
  }
  if (prop.default !== undefined) bits.push(`default ${show(prop.default)}`);
  return bits.join(" · ");
}

// The JSON Schema keyword checks the browser has no attribute for (pattern is a search, not a full match).
function customCheck(input, check) {
  const run = () => input.setCustomValidity(input.value === "" ? "" : (check(input.value) || ""));
  input.addEventListener("input", run);
  return run;
}

function stringCheck(prop) {
  return (s) => {
    if (prop.pattern !== undefined) {
      let re = null;
      try { re = new RegExp(prop.pattern, "u"); } catch (e) { return ""; }
      if (!re.test(s)) return `Must match the pattern ${prop.pattern}`;
    }
    if (prop.minLength !== undefined && [...s].length < prop.minLength) return `At least ${prop.minLength} characters`;
    if (prop.maxLength !== undefined && [...s].length > prop.maxLength) return `At most ${prop.maxLength} characters`;
    return "";
  };
}

// One item of an array typed in a text box: value and problem.
function parseItem(text, items) {
  const t = items.type;
  if (t === "integer" || t === "number") {
    const n = Number(text);
    if (text === "" || !Number.isFinite(n)) return [text, `"${text}" is not a number`];
    if (t === "integer" && !Number.isInteger(n)) return [n, `${text} is not a whole number`];
    if (items.minimum !== undefined && n < items.minimum) return [n, `${text} is less than ${items.minimum}`];
    if (items.maximum !== undefined && n > items.maximum) return [n, `${text} is more than ${items.maximum}`];
    return [n, ""];
  }
  if (t === "boolean") return text === "true" || text === "false" ? [text === "true", ""] : [text, `"${text}" is not true or false`];
  if (items.enum && !items.enum.map(String).includes(text)) return [text, `"${text}" is not one of ${items.enum.join(", ")}`];
  if (items.format === "date" && !/^\d{4}-\d{2}-\d{2}$/.test(text)) return [text, `"${text}" is not a date (YYYY-MM-DD)`];
  return [text, stringCheck(items)(text)];
}

// What a form's fields hold, by name: a field left empty is left out (the tool's default applies).
function filled(fields) {
  const values = {};
  for (const f of fields) {
    const v = f.get();
    if (v !== undefined) values[f.name] = v;
  }
  return values;
}

function field(name, prop, required) {
  prop = plain(prop);
  const id = "arg-" + name;
  const t = prop.type;
  const common = { id, name, required: required && t !== "boolean" && t !== "array" };
  const hasDefault = prop.default !== undefined;
  let control, get, sync = null;

  if (t === "array" && prop.items && Array.isArray(prop.items.enum)) {
    // A set of choices: one checkbox each.
    const chosen = new Set((prop.default || []).map(show));
    const boxes = prop.items.enum.map((v) => h("input", { type: "checkbox", value: JSON.stringify(v), checked: chosen.has(show(v)) }));
    const first = boxes[0];
    const check = () => {
      const n = boxes.filter((b) => b.checked).length;
      let msg = "";
      if (prop.minItems !== undefined && n < prop.minItems) msg = `Pick at least ${prop.minItems}`;
      if (prop.maxItems !== undefined && n > prop.maxItems) msg = `Pick at most ${prop.maxItems}`;
      if (first) first.setCustomValidity(msg);
    };
    boxes.forEach((b) => b.addEventListener("change", check));
    check();
    sync = check;
    control = h("span", { class: "choices", id, "data-name": name },
      boxes.map((b, i) => h("label", { class: "check" }, b, " " + String(prop.items.enum[i]))));
    get = () => {
      const v = boxes.filter((b) => b.checked).map((b) => JSON.parse(b.value));
      return v.length || required || hasDefault ? v : undefined;
    };
  } else if (t === "array") {
    // Free items: one per line, or a JSON array; items that cannot hold a comma (numbers, dates,
    // booleans) may also be comma-separated. A text item keeps its commas.
    const items = prop.items || { type: "string" };
    const commas = items.type !== "string" || items.format !== undefined;
    control = h("textarea", { ...common, rows: 3,
      placeholder: commas ? "one value per line (or comma-separated), or a JSON array" : "one value per line, or a JSON array" }, hasDefault ? (prop.default || []).map(String).join("\n") : "");
    const parse = (s) => {
      if (s.trim().startsWith("[")) {
        let list;
        try { list = JSON.parse(s); } catch (e) { return [[s, "not a JSON array: " + e.message]]; }
        if (!Array.isArray(list)) return [[s, "not a JSON array"]];
        return list.map((x) => (typeof x === "string" ? parseItem(x, items) : parseItem(JSON.stringify(x), items)));
      }
      const parts = s.split(commas ? /[\n,]/ : /\n/).map((x) => x.trim()).filter((x) => x !== "");
      return parts.map((x) => parseItem(x, items));
    };
    sync = customCheck(control, (s) => {
      const parsed = parse(s);
      const bad = parsed.find((p) => p[1]);
      if (bad) return bad[1];
      if (prop.minItems !== undefined && parsed.length < prop.minItems) return `At least ${prop.minItems} items`;
      if (prop.maxItems !== undefined && parsed.length > prop.maxItems) return `At most ${prop.maxItems} items`;
      return "";
    });
    get = () => {
      const v = parse(control.value).map((p) => p[0]);
      return v.length || required || hasDefault ? v : undefined;
    };
  } else if (Array.isArray(prop.enum)) {
    control = h("select", common,
      required ? null : h("option", { value: "" }, "(leave out)"),
      prop.enum.map((v) => h("option", { value: JSON.stringify(v), selected: hasDefault && show(v) === show(prop.default) }, String(v))));
    if (required && !hasDefault) control.prepend(h("option", { value: "", selected: true, disabled: true }, "(choose)"));
    get = () => (control.value === "" ? undefined : JSON.parse(control.value));
  } else if (t === "boolean") {
    if (hasDefault || required) {
      control = h("input", { id, name, type: "checkbox", checked: prop.default === true });
      get = () => control.checked;
    } else {
      control = h("select", common, h("option", { value: "" }, "(leave out)"),
        h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
      get = () => (control.value === "" ? undefined : control.value === "true");
    }
  } else if (t === "integer" || t === "number") {
    control = h("input", { ...common, type: "number", step: t === "integer" ? "1" : "any",
      min: prop.minimum, max: prop.maximum, value: hasDefault ? prop.default : null });
    get = () => (control.value === "" ? undefined : Number(control.value));
  } else if (t === "string" && (prop.format === "date" || prop.format === "date-time")) {
    const dt = prop.format === "date-time";
    const fit = (v) => (v === undefined ? null : dt ? String(v).slice(0, 19) : String(v));
    // Date bounds are in the description (JSON Schema has no keyword for them); the server checks them.
    control = h("input", { ...common, type: dt ? "datetime-local" : "date", step: dt ? "1" : null,
      value: hasDefault ? fit(prop.default) : null });
    get = () => {
      if (control.value === "") return undefined;
      return dt && /T\d\d:\d\d$/.test(control.value) ? control.value + ":00" : control.value;
    };
  } else if (t === "string") {
    const list = Array.isArray(prop.examples) && prop.examples.length ? id + "-examples" : null;
    control = h("input", { ...common, type: "text", minlength: prop.minLength, maxlength: prop.maxLength,
      list, placeholder: list ? "e.g. " + prop.examples.join(", ") : null, value: hasDefault ? prop.default : null });
    sync = customCheck(control, stringCheck(prop));
    if (list) control = h("span", {}, control, h("datalist", { id: list }, prop.examples.map((v) => h("option", { value: String(v) }))));
    get = () => {
      const input = control.tagName === "INPUT" ? control : control.querySelector("input");
      return input.value === "" && !required ? undefined : input.value;
    };
  } else {
    // Anything else: JSON text.
    control = h("textarea", { ...common, rows: 2, placeholder: "JSON" }, hasDefault ? JSON.stringify(prop.default) : "");
    get = () => {
      if (control.value.trim() === "") return undefined;
      try { return JSON.parse(control.value); } catch (e) { return control.value; }
    };
  }
  if (sync) sync();
  const el = h("div", { class: "field" },
    h("label", { for: id }, label(name, prop, required)),
    control,
    h("small", { class: "help" }, prop.description || "", h("span", { class: "limits" }, hints(prop))));
  return { name, el, get, sync };
}

// ---- calling and drawing the answer ------------------------------------------------------------

// A call as a client that can ask the person makes it (/api/ask): NDJSON lines of progress while the
// query runs, then the answer; or the questions to ask first, each a form, posted again with the answers.
async function callTool(name, args, answers) {
  const box = $("#result");
  const button = $("#form button[type=submit]");
  button.disabled = true;
  box.classList.add("busy");
  const bar = h("progress", { max: 100 });
  const note = h("span", { class: "progress-note" }, "running…");
  box.replaceChildren(h("div", { class: "running" }, bar, " ", note));
  let out = null;
  try {
    const r = await fetch("/api/ask/" + encodeURIComponent(name), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ arguments: args, answers }),
    });
    if (!r.ok) throw new Error((await r.json()).error || `HTTP ${r.status}`);
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffered += decoder.decode(value || new Uint8Array(), { stream: !done });
      let cut;
      while ((cut = buffered.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffered.slice(0, cut));
        buffered = buffered.slice(cut + 1);
        if (line.progress !== undefined) {
          bar.value = line.progress;
          note.textContent = line.message || `${Math.round(line.progress)}%`;
        } else {
          out = line;
        }
      }
      if (done) break;
    }
    if (!out) throw new Error("the preview server sent no answer");
    if (out.error) throw new Error(out.error);
  } catch (e) {
    box.replaceChildren(h("div", { class: "answer error" }, h("h3", {}, "The preview could not call the tool"), h("p", {}, String(e.message || e))));
    return;
  } finally {
    button.disabled = false;
    box.classList.remove("busy");
  }
  if (out.questions) askPerson(box, name, args, answers, out.questions);
  else renderResult(box, out);
}

// The forms a host shows the person: answering posts the call again; declining runs nothing.
function askPerson(box, name, args, answers, questions) {
  const forms = questions.map((q) => {
    const required = new Set(q.schema.required || []);
    const fields = Object.entries(q.schema.properties || {}).map(([n, prop]) => field(n, prop, required.has(n)));
    const form = h("form", { class: "question", "data-key": q.key },
      h("h3", {}, "The tool asks: " + q.message),
      fields.map((f) => f.el),
      h("div", { class: "actions" },
        h("button", { type: "submit" }, "Answer"),
        h("button", { type: "button", class: "decline" }, "Decline")));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      callTool(name, args, { ...answers, [q.key]: filled(fields) });
    });
    form.querySelector(".decline").addEventListener("click", () => {
      box.replaceChildren(h("div", { class: "answer error" }, h("h3", {}, "Not run"),
        h("p", { class: "error-text" }, `Not run: the person declined the question '${q.key}'.`)));
    });
    return form;
  });
  box.replaceChildren(h("div", { class: "asking" }, forms));
}

function renderResult(box, out) {
  closeApp();
  const r = out.result || {};
  const sc = r.structuredContent || {};
  const prose = (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
  const table = Array.isArray(sc.table) ? sc.table : null;
  const rows = table ? Math.max(table.length - 1, 0) : null;
  const tool = state.tools.find((t) => t.name === out.tool) || { name: out.tool };
  const resourceUri = tool._meta && tool._meta.ui && tool._meta.ui.resourceUri;
  const answer = h("div", { class: "answer" + (r.isError ? " error" : ""), "data-version": out.version });
  if (r.isError) {
    answer.append(h("h3", {}, "The tool answered with an error (isError: true)"), h("p", { class: "error-text" }, prose || "(no message)"));
  } else {
    answer.append(h("section", { class: "prose" }, h("h3", {}, "What the model reads (content)"), h("div", { class: "text" }, prose)));
    const links = (r.content || []).filter((c) => c.type === "resource_link");
    if (links.length) answer.append(downloadsSection(out.tool, links));
  }
  const frame = h("iframe", { class: "app-frame", sandbox: "allow-scripts", title: `${tool.name}: the answer as the host shows it`,
    src: "/app/" + encodeURIComponent(tool.name) });
  answer.append(h("section", { class: "app" },
    h("h3", {}, resourceUri ? `What the person sees (MCP App ${resourceUri})`
      : "What the person sees in a gateway (this tool has app: false, so MCP Apps hosts show no app)"),
    frame));
  const charts = (sc.charts || []).length;
  answer.append(h("p", { class: "stats" },
    h("span", { class: "elapsed" }, `${out.elapsed_ms} ms`), " · ",
    h("span", { class: "rows" }, rows === null ? "no table" : `${rows} row${rows === 1 ? "" : "s"}`), " · ",
    `${charts} chart${charts === 1 ? "" : "s"}`, " · arguments ", h("code", {}, JSON.stringify(out.arguments))));
  answer.append(h("details", { class: "raw" }, h("summary", {}, "Raw result JSON"), h("pre", {}, JSON.stringify(r, null, 2))));
  box.replaceChildren(answer);
  openApp(frame, tool, out.arguments, r);
}

// The answer's download links (spec `download:`): each fetched through the preview as resources/read
// reads it, and saved under the link's name.
function downloadsSection(toolName, links) {
  const note = h("p", { class: "download-note" });
  const section = h("section", { class: "downloads" },
    h("h3", {}, "What the person can download (resource_link: every row, not only those the model reads)"),
    h("ul", {}, links.map((link) => h("li", {},
      h("button", { type: "button", class: "download", "data-uri": link.uri, onclick: () => saveDownload(toolName, link, note) },
        `Download ${link.name}`),
      " ", h("code", {}, link.mimeType || ""), " ", h("span", { class: "muted" }, link.description || "")))),
    note);
  return section;
}

async function saveDownload(toolName, link, note) {
  note.textContent = `Reading ${link.name}…`;
  try {
    const r = await fetch("/api/download/" + encodeURIComponent(toolName), {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ uri: link.uri }),
    });
    if (!r.ok) {
      const body = await r.json().catch(() => ({}));
      note.textContent = body.error || `HTTP ${r.status}`;
      return;
    }
    const blob = await r.blob();
    const a = h("a", { href: URL.createObjectURL(blob), download: link.name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    note.textContent = `Saved ${link.name} (${blob.size.toLocaleString()} bytes).`;
  } catch (e) {
    note.textContent = String(e.message || e);
  }
}

// ---- the MCP App host: the preview wires the app's iframe as an MCP Apps host does ---------------
// ui/initialize -> host context; ui/notifications/initialized -> tool-input, tool-result; the app
// reports its size and asks the host to open links. Messages count only from that iframe.

let appHost = null;

function closeApp() {
  if (appHost) window.removeEventListener("message", appHost);
  appHost = null;
}

function openApp(frame, tool, args, result) {
  const post = (msg) => frame.contentWindow && frame.contentWindow.postMessage({ jsonrpc: "2.0", ...msg }, "*");
  const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  const context = {
    theme: dark ? "dark" : "light", displayMode: "inline", availableDisplayModes: ["inline"],
    locale: navigator.language, platform: "web", containerDimensions: { maxHeight: 6000 },
    toolInfo: { tool: { name: tool.name, title: tool.title, description: tool.description, inputSchema: tool.inputSchema } },
  };
  const answers = {
    "ui/initialize": () => ({ protocolVersion: "2026-01-26", hostInfo: { name: "mcpgen preview", version: "1" },
      hostCapabilities: { openLinks: {} }, hostContext: context }),
    "ui/open-link": (params) => {
      const url = String(params && params.url);
      if (!/^https?:\/\//i.test(url)) throw new Error("only http(s) links open");
      window.open(url, "_blank", "noopener,noreferrer");
      return {};
    },
    "ui/request-display-mode": () => ({ mode: "inline" }),
    ping: () => ({}),
  };
  appHost = (event) => {
    if (event.source !== frame.contentWindow) return;
    const msg = event.data;
    if (!msg || msg.jsonrpc !== "2.0" || typeof msg.method !== "string") return;
    if (msg.id !== undefined) {
      const answer = answers[msg.method];
      try {
        if (!answer) throw Object.assign(new Error("Method not found: " + msg.method), { code: -32601 });
        post({ id: msg.id, result: answer(msg.params) });
      } catch (e) {
        post({ id: msg.id, error: { code: e.code || -32000, message: String(e.message || e) } });
      }
    } else if (msg.method === "ui/notifications/initialized") {
      post({ method: "ui/notifications/tool-input", params: { arguments: args || {} } });
      post({ method: "ui/notifications/tool-result", params: result });
      frame.dataset.state = "sent";
    } else if (msg.method === "ui/notifications/size-changed") {
      const height = Number(msg.params && msg.params.height);
      if (height > 0) frame.style.height = `${Math.min(height, 6000)}px`;
    }
  };
  window.addEventListener("message", appHost);
}

loadTools().catch((e) => { $("#status").textContent = "could not load the tools: " + e.message; });
setInterval(poll, 1000);
