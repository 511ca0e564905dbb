// oxmcp inspect: the page. Plain JavaScript, no build step. It talks to the local app over
// one WebSocket: {id, op, ...} out, {re: id, ok | error} and {ev: ...} events in.
// Everything the server sends is shown as text (textContent), never as HTML.
'use strict';

// ---------- small DOM helpers ----------
const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const pretty = (v) => JSON.stringify(v, null, 2);
const clear = (el) => { while (el.firstChild) el.firstChild.remove(); return el; };
function errorText(e) {
  if (!e) return 'error';
  if (typeof e === 'string') return e;
  return (e.code !== undefined && e.code !== null ? `${e.code}: ` : '') + (e.message || pretty(e));
}

// ---------- the connection to the local app ----------
const state = {
  ws: null, nextId: 1, pending: new Map(), connected: false, modern: false,
  tools: [], toolItems: [], toolGeneration: 0, selectedTool: null, activeCall: null,
  traffic: [], seen: new Set(), sentAt: new Map(), subscribed: new Set(),
  shownResource: null, info: null, tasks: new Map(), roots: [],
};
window.__inspector = { state, perf: { longestTask: 0, longTasks: [] } };
// The longest time the page's main thread was busy at once (a stall is a long task).
if (window.PerformanceObserver && PerformanceObserver.supportedEntryTypes?.includes('longtask')) {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const perf = window.__inspector.perf;
      perf.longestTask = Math.max(perf.longestTask, e.duration);
      perf.longTasks.push([Math.round(e.startTime), Math.round(e.duration)]);
      if (perf.longTasks.length > 100) perf.longTasks.shift();
    }
  }).observe({ type: 'longtask', buffered: true });
}

function send(op, params = {}) {
  return new Promise((resolve, reject) => {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return reject({ message: 'the page is not connected to oxmcp inspect' });
    const id = state.nextId++;
    state.pending.set(id, { resolve, reject });
    state.ws.send(JSON.stringify({ id, op, ...params }));
  });
}
// send(), with its id known before the answer (for cancellation).
function sendWithId(op, params = {}) {
  const id = state.nextId;
  return { id, done: send(op, params) };
}

// The page's key: given once in the address's fragment by the token's redirect, then kept
// in this tab's storage (the WebSocket needs it besides the cookie).
function pageKey() {
  const name = `oxmcp-inspect-key-${location.port}`;
  const m = /^#key=([0-9a-f]+)$/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(name, m[1]);
    history.replaceState(null, '', '/');
  }
  return sessionStorage.getItem(name);
}

function open() {
  const key = pageKey();
  if (!key) {
    setStatus('this tab has no key: open the address oxmcp inspect printed', 'bad');
    return;
  }
  const ws = new WebSocket(`ws://${location.host}/ws?key=${encodeURIComponent(key)}`);
  state.ws = ws;
  ws.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch { return; }
    if (msg.re !== undefined) {
      const p = state.pending.get(msg.re);
      if (!p) return;
      state.pending.delete(msg.re);
      if ('ok' in msg) p.resolve(msg.ok); else p.reject(msg.error);
    } else if (msg.ev) {
      onEvent(msg);
    }
  };
  ws.onclose = () => {
    setStatus('page disconnected from oxmcp inspect', 'bad');
    for (const p of state.pending.values()) p.reject({ message: 'the page lost its connection' });
    state.pending.clear();
    setTimeout(open, 1500);
  };
}

function setStatus(text, kind) {
  const s = $('#status');
  s.textContent = text;
  s.className = `status ${kind || ''}`;
}

function onEvent(ev) {
  switch (ev.ev) {
    case 'hello':
      state.page = ev.page;
      state.roots = (ev.roots || []).map((r) => ({ uri: r.uri, name: r.name || '' }));
      renderRoots();
      $('#target').textContent = ev.target;
      $('#target').title = ev.target;
      if (ev.connected) onConnected(); else if (ev.error) setStatus(`not connected: ${ev.error}`, 'bad');
      break;
    case 'connecting': setStatus('connecting…'); break;
    case 'connected': if (ev.logLevel) $('#log-level').value = ev.logLevel; state.sentAt.clear(); onConnected(); break;
    case 'disconnected': state.connected = false; setStatus(`disconnected: ${ev.error || ''}`, 'bad'); break;
    case 'traffic': addTraffic(ev); break;
    case 'log': addLog(ev.params); break;
    case 'progress': if (ev.page === state.page) onProgress(ev); break;
    case 'task': onTask(ev.task, ev.page === state.page ? ev.call : null); break;
    case 'ask': showAsk(ev); break;
    case 'authorize': showAuthorize(ev.url); break;
    case 'asked': { const el = $(`.ask[data-ask="${ev.ask}"]`); if (el) el.remove(); break; }
    case 'updated': onUpdated(ev.uri); break;
    case 'changed': onChanged(ev.what); break;
    case 'lagged': addLog({ level: 'warning', logger: 'inspector', data: `the page missed ${ev.missed} events` }); break;
    case 'notice': addLog({ level: 'warning', logger: 'inspector', data: ev.text }); break;
    case 'transport_error': addLog({ level: 'error', logger: 'transport', data: ev.error }); break;
    default: break;
  }
}

async function onConnected() {
  state.connected = true;
  for (const box of $$('.ask[data-kind=authorize]')) box.remove();
  try {
    const info = await send('info');
    state.info = info;
    state.modern = info.era === 'modern';
    setStatus(`connected: ${info.protocolVersion} (${state.modern ? '2026-07-28, stateless' : 'legacy, initialize handshake'})`, 'ok');
    renderInfo(info);
  } catch (e) {
    setStatus(`connected, but info failed: ${errorText(e)}`, 'bad');
  }
  loadTools(); loadResources(); loadPrompts(); loadSkills(); loadTasks();
}

// A failed action, said in the server log pane (no modal dialog).
function problem(e) {
  addLog({ level: 'error', logger: 'inspector', data: errorText(e) });
}

// ---------- tabs ----------
function showPanel(name) {
  for (const b of $$('#tabs button')) b.classList.toggle('active', b.dataset.panel === name);
  for (const p of $$('.panel')) p.classList.toggle('active', p.id === `panel-${name}`);
}

// ---------- server ----------
function renderInfo(info) {
  const dl = clear($('#server-info'));
  const row = (k, v) => { dl.append(h('dt', { text: k }), v instanceof Node ? h('dd', {}, v) : h('dd', { text: v ?? '' })); };
  const si = info.serverInfo || {};
  row('Name', `${si.name || ''} ${si.version || ''}${si.title ? ` (${si.title})` : ''}`);
  row('Protocol', info.protocolVersion);
  row('Era', info.era === 'modern' ? '2026-07-28: stateless, no handshake' : 'legacy: initialize handshake, session');
  if (info.supportedVersions) row('Supports', info.supportedVersions.join(', '));
  row('Target', info.target);
  row('Capabilities', h('pre', { id: 'server-capabilities', text: pretty(info.capabilities || {}) }));
  if (info.instructions) row('Instructions', h('pre', { id: 'server-instructions', text: info.instructions }));
}

// ---------- schema forms ----------
// The schema with its local references (`$ref` to #/$defs/... or #/definitions/...) put in
// place, and `anyOf: [X, {type: null}]` (an optional X, as schemars writes it) read as X.
// Recursion past a depth, and a reference it cannot find, are left to the JSON editor.
// At most this many schema nodes are made into fields; past it (a server's schema that
// refers to itself many times over), the JSON editor.
const SCHEMA_BUDGET = 2000;

function resolve(schema, root, depth = 0, budget = { left: SCHEMA_BUDGET }) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  if (depth > 12 || --budget.left < 0) return {};
  if (typeof schema.$ref === 'string') {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref);
    let name = null;
    try { name = m && decodeURIComponent(m[2]).replace(/~1/g, '/').replace(/~0/g, '~'); } catch { name = null; }
    const defs = m && root[m[1]];
    const target = name !== null && defs && typeof defs === 'object' && Object.hasOwn(defs, name) ? defs[name] : null;
    if (!target || typeof target !== 'object') return {};
    const { $ref, ...outer } = schema;
    return resolve({ ...target, ...outer }, root, depth + 1, budget);
  }
  for (const key of ['anyOf', 'oneOf']) {
    const members = Array.isArray(schema[key]) ? schema[key].filter((x) => x && typeof x === 'object' && x.type !== 'null') : null;
    if (members && members.length === 1 && !('const' in members[0])) {
      const { [key]: _, ...outer } = schema;
      return resolve({ ...members[0], ...outer }, root, depth + 1, budget);
    }
  }
  const out = { ...schema };
  if (schema.properties && typeof schema.properties === 'object') out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, resolve(v, root, depth + 1, budget)]));
  if (schema.items && typeof schema.items === 'object' && !Array.isArray(schema.items)) out.items = resolve(schema.items, root, depth + 1, budget);
  return out;
}

// A form for a JSON Schema (the subset tools and elicitations use), and what it holds.
function kindOf(schema) {
  if (!schema || typeof schema !== 'object') return 'json';
  if (Array.isArray(schema.enum)) return 'enum';
  let t = schema.type;
  if (Array.isArray(t)) { const rest = t.filter((x) => x !== 'null'); t = rest.length === 1 ? rest[0] : null; }
  if (t === 'object' && schema.properties) return 'object';
  if (t === 'array' && schema.items && !Array.isArray(schema.items)) return 'array';
  if (['string', 'number', 'integer', 'boolean'].includes(t)) return t;
  if (Array.isArray(schema.oneOf) && schema.oneOf.length && schema.oneOf.every((s) => s && typeof s === 'object' && 'const' in s)) return 'enum';
  return 'json';
}

// Returns {el, read()}; read() gives {value} or {empty: true} or {error}.
function fieldFor(schema, path, required) {
  const kind = kindOf(schema);
  const dflt = schema && schema.default;
  const test = { field: path };
  switch (kind) {
    case 'object': {
      const fs = h('fieldset', {});
      const parts = Object.entries(schema.properties).map(([key, sub]) => {
        const req = (schema.required || []).includes(key);
        const f = fieldFor(sub, path ? `${path}.${key}` : key, req);
        fs.append(h('div', { class: 'field' },
          h('label', { class: 'key' }, sub.title || key, req ? h('span', { class: 'req', text: '*' }) : null),
          sub.description ? h('div', { class: 'hint', text: sub.description }) : null, f.el));
        return [key, f, req];
      });
      return {
        el: fs,
        read() {
          const out = {}; let any = false;
          for (const [key, f] of parts) {
            const r = f.read();
            if (r.error) return { error: `${key}: ${r.error}` };
            if (!r.empty) { out[key] = r.value; any = true; }
          }
          return any || required ? { value: out } : { empty: true };
        },
      };
    }
    case 'array': {
      const list = h('div', { class: 'array', dataset: test });
      const items = [];
      const add = (v) => {
        const f = fieldFor(schema.items, `${path}[]`, true);
        if (v !== undefined) setField(f, v);
        const row = h('div', { class: 'array-item' }, f.el,
          h('button', { type: 'button', text: 'Remove', onclick: () => { row.remove(); items.splice(items.indexOf(f), 1); } }));
        items.push(f); list.insertBefore(row, addBtn);
      };
      const addBtn = h('button', { type: 'button', text: 'Add item', class: 'add-item', onclick: () => add() });
      list.append(addBtn);
      if (Array.isArray(dflt)) dflt.forEach(add);
      return {
        el: list,
        read() {
          const out = [];
          for (const f of items) { const r = f.read(); if (r.error) return r; out.push(r.empty ? null : r.value); }
          return out.length || required ? { value: out } : { empty: true };
        },
      };
    }
    case 'enum': {
      const values = Array.isArray(schema.enum) ? schema.enum : schema.oneOf.map((s) => s.const);
      const labels = Array.isArray(schema.enum) ? (schema.enumNames || values.map(String)) : schema.oneOf.map((s) => s.title || String(s.const));
      const sel = h('select', { dataset: test }, required ? null : h('option', { value: '', text: '' }),
        values.map((v, i) => h('option', { value: String(i), text: labels[i], dataset: { json: JSON.stringify(v) } })));
      if (dflt !== undefined) { const i = values.indexOf(dflt); if (i >= 0) sel.value = String(i); }
      return { el: sel, read: () => (sel.value === '' ? { empty: true } : { value: values[Number(sel.value)] }) };
    }
    case 'boolean': {
      const cb = h('input', { type: 'checkbox', dataset: test });
      cb.checked = dflt === true;
      // An optional one without a default is absent until it is touched.
      let touched = false;
      cb.addEventListener('change', () => { touched = true; });
      return { el: cb, read: () => (required || touched || dflt !== undefined ? { value: cb.checked } : { empty: true }) };
    }
    case 'number': case 'integer': {
      const inp = h('input', { type: 'number', step: kind === 'integer' ? '1' : 'any', dataset: test,
        min: schema.minimum, max: schema.maximum, placeholder: kind });
      if (dflt !== undefined) inp.value = String(dflt);
      return {
        el: inp,
        read() {
          if (inp.value.trim() === '') return { empty: true };
          const n = Number(inp.value);
          if (!Number.isFinite(n)) return { error: 'not a number' };
          return { value: n };
        },
      };
    }
    case 'string': {
      const long = (schema.maxLength || 0) > 200 || schema.format === 'textarea';
      // date-time stays text: the browser's own field gives no seconds and no time zone.
      const type = { email: 'email', uri: 'url', date: 'date' }[schema.format] || 'text';
      const inp = long ? h('textarea', { dataset: test }) : h('input', { type, dataset: test, placeholder: schema.format || 'text' });
      if (dflt !== undefined) inp.value = String(dflt);
      // Empty is absent (a required one is then reported missing); "" itself goes through the raw JSON editor.
      return { el: inp, read: () => (inp.value === '' ? { empty: true } : { value: inp.value }) };
    }
    default: {
      const ta = h('textarea', { dataset: test, placeholder: 'JSON', rows: 4 });
      if (dflt !== undefined) ta.value = pretty(dflt);
      return {
        el: ta,
        read() {
          if (ta.value.trim() === '') return { empty: true };
          try { return { value: JSON.parse(ta.value) }; } catch (e) { return { error: `not JSON: ${e.message}` }; }
        },
      };
    }
  }
}

function setField(f, v) {
  const el = f.el;
  if (el.matches('select')) {
    const i = [...el.options].findIndex((o) => o.dataset.json === JSON.stringify(v));
    if (i >= 0) el.selectedIndex = i;
  } else if (el.matches('input[type=checkbox]')) el.checked = !!v;
  else if (el.matches('textarea') && typeof v !== 'string') el.value = pretty(v);
  else if (el.matches('input, textarea')) el.value = String(v);
}

// What a schema says of a value: a list of problems ("path: what"), empty when it is valid.
function validate(schema, v, path = '') {
  const errs = [];
  if (!schema || typeof schema !== 'object') return errs;
  const at = path || '(arguments)';
  const t = schema.type;
  const types = Array.isArray(t) ? t : t ? [t] : [];
  const typeOf = (x) => (x === null ? 'null' : Array.isArray(x) ? 'array' : Number.isInteger(x) ? 'integer' : typeof x);
  if (types.length) {
    const actual = typeOf(v);
    const ok = types.some((want) => want === actual || (want === 'number' && actual === 'integer'));
    if (!ok) { errs.push(`${at}: must be ${types.join(' or ')}, not ${actual}`); return errs; }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) errs.push(`${at}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (typeof v === 'number') {
    if (schema.minimum !== undefined && v < schema.minimum) errs.push(`${at}: must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && v > schema.maximum) errs.push(`${at}: must be at most ${schema.maximum}`);
  }
  if (typeof v === 'string') {
    if (schema.minLength !== undefined && v.length < schema.minLength) errs.push(`${at}: at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && v.length > schema.maxLength) errs.push(`${at}: at most ${schema.maxLength} characters`);
    if (schema.pattern) { try { if (!new RegExp(schema.pattern, 'u').test(v)) errs.push(`${at}: must match ${schema.pattern}`); } catch { /* a pattern JS cannot read: the server checks it */ } }
  }
  if (Array.isArray(v) && schema.items && !Array.isArray(schema.items)) v.forEach((x, i) => errs.push(...validate(schema.items, x, `${path}[${i}]`)));
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const key of schema.required || []) if (!(key in v)) errs.push(`${path ? `${path}.` : ''}${key}: required`);
    for (const [key, sub] of Object.entries(schema.properties || {})) if (key in v) errs.push(...validate(sub, v[key], path ? `${path}.${key}` : key));
    if (schema.additionalProperties === false) for (const key of Object.keys(v)) if (!(key in (schema.properties || {}))) errs.push(`${key}: not a known argument`);
  }
  return errs;
}

// A schema form with a raw JSON editor beside it. Returns {el, value()} where value() gives
// {value} or {errors: [...]}.
function schemaForm(schema, idPrefix) {
  const budget = { left: SCHEMA_BUDGET };
  const resolved = schema && typeof schema === 'object' ? resolve(schema, schema, 0, budget) : null;
  const s = resolved && resolved.type === 'object' ? resolved : { type: 'object', properties: {} };
  // A schema too large to be a form is edited as JSON.
  const usable = budget.left >= 0 && kindOf({ ...s, properties: s.properties || {} }) === 'object';
  const form = h('form', { class: 'schema', id: `${idPrefix}-form`, onsubmit: (e) => e.preventDefault() });
  const fields = usable ? fieldFor({ ...s, properties: s.properties || {} }, '', true) : null;
  const raw = h('textarea', { id: `${idPrefix}-raw`, placeholder: '{ }', hidden: true });
  const toggle = h('input', { type: 'checkbox', id: `${idPrefix}-raw-toggle` });
  if (fields) form.append(fields.el);
  form.append(h('label', { class: 'muted' }, toggle, ' Edit as raw JSON'), raw);
  if (!fields) { toggle.checked = true; raw.hidden = false; raw.value = '{}'; }
  toggle.addEventListener('change', () => {
    raw.hidden = !toggle.checked;
    if (fields) fields.el.hidden = toggle.checked;
    if (toggle.checked && fields) { const r = fields.read(); raw.value = pretty(r.value || {}); }
  });
  return {
    el: form,
    value() {
      let v;
      if (toggle.checked || !fields) {
        try { v = JSON.parse(raw.value || '{}'); } catch (e) { return { errors: [`not JSON: ${e.message}`] }; }
      } else {
        const r = fields.read();
        if (r.error) return { errors: [r.error] };
        v = r.value || {};
      }
      const errors = validate(s, v);
      return errors.length ? { errors } : { value: v };
    },
  };
}

// ---------- results ----------
const isMime = (m, kind) => typeof m === 'string' && new RegExp(`^${kind}/[a-z0-9.+-]+$`, 'i').test(m);

function renderContent(c) {
  switch (c.type) {
    case 'text': return h('pre', { class: 'content-text', text: c.text });
    case 'image':
      return isMime(c.mimeType, 'image') ? h('img', { class: 'content-image', src: `data:${c.mimeType};base64,${c.data}`, alt: 'image content' })
        : h('div', { class: 'muted', text: `image of type ${c.mimeType}` });
    case 'audio':
      return isMime(c.mimeType, 'audio') ? h('audio', { class: 'content-audio', controls: true, src: `data:${c.mimeType};base64,${c.data}` })
        : h('div', { class: 'muted', text: `audio of type ${c.mimeType}` });
    case 'resource': return h('div', { class: 'content-resource' }, h('div', { class: 'label', text: `embedded resource ${c.resource && c.resource.uri}` }), renderResourceContents(c.resource || {}));
    case 'resource_link':
      return h('div', { class: 'content-link' }, h('span', { class: 'label', text: 'resource link ' }), h('code', { text: c.uri }), ' ',
        h('button', { type: 'button', text: 'Read', onclick: () => { showPanel('resources'); readResource(c.uri); } }));
    default: return h('pre', { class: 'json', text: pretty(c) });
  }
}

function renderResourceContents(rc) {
  if (typeof rc.text === 'string') return h('pre', { class: 'resource-text', text: rc.text });
  if (typeof rc.blob === 'string') {
    const bytes = Math.floor(rc.blob.length * 3 / 4);
    if (isMime(rc.mimeType, 'image')) return h('img', { class: 'content-image', src: `data:${rc.mimeType};base64,${rc.blob}`, alt: rc.uri });
    return h('div', { class: 'resource-blob' }, `${bytes} bytes of ${rc.mimeType || 'binary data'} `,
      h('button', { type: 'button', text: 'Download', onclick: () => download(rc.uri.split('/').pop() || 'resource.bin', base64Bytes(rc.blob)) }));
  }
  return h('pre', { class: 'json', text: pretty(rc) });
}

function base64Bytes(b64) {
  const s = atob(b64); const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// Downloads `data` as a file: always as plain bytes (never a type the browser would render).
function download(name, data) {
  const url = URL.createObjectURL(new Blob([data], { type: 'application/octet-stream' }));
  const a = h('a', { href: url, download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function renderCallResult(out) {
  const r = out.result || {};
  const box = h('div', { class: `result${r.isError ? ' is-error' : ''}`, id: 'tool-result' });
  box.append(h('div', { class: 'label', text: r.isError ? 'result: isError' : 'result' }));
  for (const c of r.content || []) box.append(renderContent(c));
  if (r.structuredContent !== undefined) {
    box.append(h('div', { class: 'label', text: 'structuredContent' }), h('pre', { class: 'structured', text: pretty(r.structuredContent) }));
    box.append(out.outputError ? h('div', { class: 'check-bad output-check', text: `does not match the outputSchema: ${out.outputError}` })
      : h('div', { class: 'check-ok output-check', text: 'matches the outputSchema' }));
  }
  return box;
}

// ---------- tools ----------
// How many tools are made into list items at a time: the page stays responsive between
// chunks however long the list is.
const TOOL_CHUNK = 200;

async function loadTools() {
  const list = clear($('#tool-list'));
  const generation = ++state.toolGeneration;
  if (state.info && !state.info.capabilities?.tools) { $('#tool-count').textContent = 'this server has no tools'; return; }
  const t0 = performance.now();
  window.__inspector.perf.toolsAsked = t0;
  let tools;
  try { tools = await send('tools'); } catch (e) { $('#tool-count').textContent = errorText(e); return; }
  if (generation !== state.toolGeneration) return;
  const t1 = performance.now();
  state.tools = tools;
  state.toolItems = [];
  const q = $('#tool-filter').value.trim().toLowerCase();
  for (let i = 0; i < tools.length; i += TOOL_CHUNK) {
    const frag = document.createDocumentFragment();
    for (const tool of tools.slice(i, i + TOOL_CHUNK)) {
      const item = toolItem(tool);
      item.li.hidden = !!q && !item.key.includes(q);
      state.toolItems.push(item);
      frag.append(item.li);
    }
    list.append(frag);
    if (i + TOOL_CHUNK < tools.length) {
      await new Promise((r) => setTimeout(r, 0));
      if (generation !== state.toolGeneration) return;
    }
  }
  filterTools();
  // How long the list took: asked and answered, then made into the page (the test reads these).
  window.__inspector.perf.toolsFetched = t1 - t0;
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  window.__inspector.perf.toolsListed = performance.now() - t0;
  window.__inspector.perf.toolCount = tools.length;
}

// One tool's list item, and the text the filter looks in.
function toolItem(tool) {
  const ann = tool.annotations || {};
  const tags = [];
  if (ann.readOnlyHint) tags.push('read-only');
  if (ann.destructiveHint) tags.push('destructive');
  if (ann.idempotentHint) tags.push('idempotent');
  if (ann.openWorldHint) tags.push('open world');
  if (tool.execution && tool.execution.taskSupport && tool.execution.taskSupport !== 'forbidden') tags.push(`task ${tool.execution.taskSupport}`);
  const icon = (tool.icons || []).find((i) => typeof i.src === 'string' && i.src.startsWith('data:image/'));
  const li = h('li', { class: 'tool', dataset: { name: tool.name } },
    icon ? h('img', { class: 'icon', src: icon.src, alt: '' }) : null,
    h('span', { class: 'name', text: tool.title || tool.name }),
    tool.title ? h('span', { class: 'muted', text: ` ${tool.name}` }) : null,
    tags.map((t) => h('span', { class: 'tag', text: t })),
    h('span', { class: 'desc muted', text: tool.description || '' }));
  li.addEventListener('click', () => selectTool(tool, li));
  return { li, key: `${tool.name} ${tool.title || ''} ${tool.description || ''}`.toLowerCase() };
}

function filterTools() {
  const t0 = performance.now();
  const q = $('#tool-filter').value.trim().toLowerCase();
  let shown = 0;
  for (const it of state.toolItems) {
    const show = !q || it.key.includes(q);
    if (it.li.hidden === show) it.li.hidden = !show;
    if (show) shown++;
  }
  $('#tool-count').textContent = q ? `${shown} of ${state.toolItems.length} tools` : `${state.toolItems.length} tools`;
  window.__inspector.perf.lastFilter = performance.now() - t0;
}

function selectTool(tool, li) {
  for (const x of $$('#tool-list li.selected')) x.classList.remove('selected');
  li.classList.add('selected');
  state.selectedTool = tool;
  const d = clear($('#tool-detail'));
  d.append(h('h2', { text: tool.title || tool.name, id: 'tool-name' }));
  if (tool.description) d.append(h('p', { text: tool.description }));
  if (tool.annotations) d.append(h('details', {}, h('summary', { text: 'Annotations' }), h('pre', { text: pretty(tool.annotations) })));
  d.append(h('details', {}, h('summary', { text: 'Input schema' }), h('pre', { text: pretty(tool.inputSchema || {}) })));
  if (tool.outputSchema) d.append(h('details', {}, h('summary', { text: 'Output schema' }), h('pre', { text: pretty(tool.outputSchema) })));
  const form = schemaForm(tool.inputSchema, 'tool');
  const errors = h('div', { class: 'errors', id: 'form-errors' });
  const support = tool.execution && tool.execution.taskSupport;
  const asTask = h('input', { type: 'checkbox', id: 'call-as-task', disabled: !support || support === 'forbidden' });
  const callBtn = h('button', { type: 'button', class: 'primary', id: 'call-tool', text: 'Call' });
  const cancelBtn = h('button', { type: 'button', class: 'danger', id: 'cancel-call', text: 'Cancel', disabled: true });
  const progress = h('div', { class: 'progress-box', id: 'call-progress', hidden: true }, h('progress', { max: 1, value: 0 }), ' ', h('span', { id: 'call-progress-text' }));
  const taskBox = h('div', { id: 'call-task', hidden: true });
  const result = h('div', { id: 'tool-result-box' });
  d.append(form.el, errors, h('div', { class: 'toolbar' }, callBtn, cancelBtn, h('label', {}, asTask, ' Run as a task')), progress, taskBox, result);
  callBtn.addEventListener('click', async () => {
    const v = form.value();
    errors.textContent = v.errors ? v.errors.join('\n') : '';
    if (v.errors) return;
    clear(result); clear(taskBox); taskBox.hidden = true;
    progress.hidden = true; $('progress', progress).removeAttribute('value'); $('#call-progress-text').textContent = '';
    const call = sendWithId('call', { name: tool.name, arguments: v.value, task: asTask.checked });
    state.activeCall = call.id;
    callBtn.disabled = true; cancelBtn.disabled = false;
    cancelBtn.onclick = () => send('cancel', { call: call.id }).catch(() => {});
    result.append(h('div', { class: 'muted', id: 'call-running', text: 'calling…' }));
    try {
      const out = await call.done;
      clear(result).append(renderCallResult(out));
    } catch (e) {
      clear(result).append(h('div', { class: 'result is-error', id: 'tool-result' }, h('div', { class: 'label', text: 'error' }), h('pre', { class: 'call-error', text: errorText(e) })));
    } finally {
      if (state.activeCall === call.id) { state.activeCall = null; callBtn.disabled = false; cancelBtn.disabled = true; }
    }
  });
}

function onProgress(ev) {
  if (ev.call !== state.activeCall) return;
  const box = $('#call-progress');
  if (!box) return;
  box.hidden = false;
  const p = ev.params || {};
  const bar = $('progress', box);
  if (p.total) { bar.max = p.total; bar.value = p.progress; } else bar.removeAttribute('value');
  $('#call-progress-text').textContent = `${p.progress}${p.total ? ` / ${p.total}` : ''}${p.message ? ` ${p.message}` : ''}`;
}

// ---------- tasks ----------
function onTask(task, call) {
  state.tasks.set(task.taskId, task);
  renderTasks();
  if (call === state.activeCall) {
    const box = $('#call-task');
    if (box) {
      box.hidden = false;
      clear(box).append(h('span', { class: 'tag', text: `task ${task.taskId}` }), ' ', h('b', { class: 'task-status', text: task.status }), ' ', task.statusMessage || '', ' ',
        ['completed', 'failed', 'cancelled'].includes(task.status) ? null : h('button', { type: 'button', class: 'danger', text: 'Cancel task', onclick: () => send('task_cancel', { id: task.taskId }).catch((e) => problem(e)) }));
    }
  }
}

async function loadTasks() {
  if (!state.info || !state.info.supportsTasks) { $('#tasks-note').textContent = 'this server declares no tasks'; return; }
  if (state.modern) {
    // 2026-07-28 has no tasks/list: the tasks started from this page, each asked again.
    $('#tasks-note').textContent = 'the tasks started from this page (2026-07-28 has no tasks/list)';
    for (const t of [...state.tasks.values()]) {
      try { state.tasks.set(t.taskId, await send('task_get', { id: t.taskId })); } catch (e) { problem(e); }
    }
    renderTasks();
    return;
  }
  try {
    const r = await send('tasks');
    for (const t of r.tasks || []) state.tasks.set(t.taskId, t);
    $('#tasks-note').textContent = '';
  } catch (e) { $('#tasks-note').textContent = errorText(e); }
  renderTasks();
}

function renderTasks() {
  const body = clear($('#task-table tbody'));
  for (const t of state.tasks.values()) {
    const done = ['completed', 'failed', 'cancelled'].includes(t.status);
    body.append(h('tr', { dataset: { task: t.taskId } }, h('td', {}, h('code', { text: t.taskId })), h('td', { text: t.status }),
      h('td', { text: t.statusMessage || '' }), h('td', { text: t.lastUpdatedAt || '' }),
      h('td', {}, done ? null : h('button', { type: 'button', class: 'danger', text: 'Cancel', onclick: () => send('task_cancel', { id: t.taskId }).then(loadTasks, (e) => problem(e)) }))));
  }
}

// ---------- resources ----------
async function loadResources() {
  const list = clear($('#resource-list')); const tl = clear($('#template-list'));
  if (state.info && !state.info.capabilities?.resources) { list.append(h('li', { class: 'muted', text: 'this server has no resources' })); return; }
  let r;
  try { r = await send('resources'); } catch (e) { list.append(h('li', { class: 'notice', text: errorText(e) })); return; }
  for (const res of r.resources || []) {
    const li = h('li', { class: 'resource', dataset: { uri: res.uri } }, h('span', { class: 'name', text: res.title || res.name || res.uri }), h('span', { class: 'desc muted', text: `${res.uri}${res.mimeType ? `  ${res.mimeType}` : ''}` }));
    li.addEventListener('click', () => readResource(res.uri));
    list.append(li);
  }
  for (const t of r.resourceTemplates || []) {
    const li = h('li', { class: 'template', dataset: { template: t.uriTemplate } }, h('span', { class: 'name', text: t.title || t.name }), h('span', { class: 'desc muted', text: t.uriTemplate }));
    li.addEventListener('click', () => showTemplate(t));
    tl.append(li);
  }
}

// An input whose suggestions come from completion/complete.
function completingInput(name, ref, others) {
  const listId = `complete-${Math.random().toString(36).slice(2)}`;
  const dl = h('datalist', { id: listId });
  const inp = h('input', { type: 'text', list: listId, dataset: { field: name }, autocomplete: 'off' });
  let timer = null;
  let asked = 0;
  inp.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const mine = ++asked;
      const params = { ref, argument: { name, value: inp.value } };
      const ctx = Object.fromEntries(Object.entries(others ? others() : {}).filter(([k, v]) => k !== name && v !== ''));
      if (Object.keys(ctx).length) params.context = { arguments: ctx };
      try {
        const r = await send('complete', { params });
        if (mine !== asked) return;  // a newer answer is coming
        const values = (r.completion?.values || []).map(String);
        clear(dl).append(...values.map((v) => h('option', { value: v })));
        inp.dataset.suggestions = values.join('\n');
      } catch { /* no completion: plain input */ }
    }, 150);
  });
  return { el: h('span', {}, inp, dl), input: inp };
}

// RFC 6570 expansion of a URI template (level 3, one value per variable), as the server
// reads it back.
function expandTemplate(template, values) {
  const keep = (op) => op === '+' || op === '#';
  const enc = (v, op) => (keep(op) ? encodeURI(v).replace(/%25([0-9A-Fa-f]{2})/g, '%$1') : encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
  return template.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, inner) => {
    const names = inner.split(',').map((n) => n.replace(/[*]$|:\d+$/, ''));
    const defined = names.filter((n) => values[n] !== undefined && values[n] !== '');
    if (!defined.length) return '';
    const first = { '': '', '+': '', '#': '#', '.': '.', '/': '/', ';': ';', '?': '?', '&': '&' }[op];
    const sep = { '': ',', '+': ',', '#': ',', '.': '.', '/': '/', ';': ';', '?': '&', '&': '&' }[op];
    const named = op === ';' || op === '?' || op === '&';
    return first + defined.map((n) => (named ? `${n}=${enc(values[n], op)}` : enc(values[n], op))).join(sep);
  });
}

function showTemplate(t) {
  const d = clear($('#resource-detail'));
  d.append(h('h2', { text: t.title || t.name }), h('code', { text: t.uriTemplate }));
  if (t.description) d.append(h('p', { text: t.description }));
  const names = [...t.uriTemplate.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(',').map((s) => s.replace(/[*:].*$/, '')));
  const inputs = {};
  const form = h('form', { class: 'schema', onsubmit: (e) => e.preventDefault() });
  const values = () => Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value]));
  for (const n of names) {
    const c = completingInput(n, { type: 'ref/resource', uri: t.uriTemplate }, values);
    inputs[n] = c.input;
    form.append(h('div', { class: 'field' }, h('label', { class: 'key', text: n }), c.el));
  }
  const btn = h('button', { type: 'button', class: 'primary', text: 'Read', id: 'template-read' });
  btn.addEventListener('click', () => {
    const v = values();
    const uri = expandTemplate(t.uriTemplate, v);
    readResource(uri);
  });
  form.append(btn);
  d.append(form);
}

async function readResource(uri) {
  for (const x of $$('#resource-list li.selected')) x.classList.remove('selected');
  const li = $$('#resource-list li').find((x) => x.dataset.uri === uri);
  if (li) li.classList.add('selected');
  state.shownResource = uri;
  const d = clear($('#resource-detail'));
  // 2026-07-28: subscriptions/listen carries subscriptions; legacy: the subscribe capability.
  const canSub = state.modern || !!state.info?.capabilities?.resources?.subscribe;
  const sub = h('button', { type: 'button', id: 'subscribe', disabled: !canSub, text: state.subscribed.has(uri) ? 'Unsubscribe' : 'Subscribe' });
  sub.addEventListener('click', async () => {
    const on = !state.subscribed.has(uri);
    try {
      await send(on ? 'subscribe' : 'unsubscribe', { uri });
      if (on) state.subscribed.add(uri); else state.subscribed.delete(uri);
      sub.textContent = on ? 'Unsubscribe' : 'Subscribe';
      sub.dataset.subscribed = on ? 'yes' : 'no';
    } catch (e) { problem(e); }
  });
  sub.dataset.subscribed = state.subscribed.has(uri) ? 'yes' : 'no';
  d.append(h('h2', { text: uri, id: 'resource-uri' }), h('div', { class: 'toolbar' }, h('button', { type: 'button', text: 'Read again', onclick: () => readResource(uri) }), sub));
  const box = h('div', { id: 'resource-content' }, h('span', { class: 'muted', text: 'reading…' }));
  d.append(box);
  try {
    const r = await send('read', { uri });
    if (state.shownResource !== uri) return;
    clear(box);
    for (const c of r.contents || []) box.append(h('div', { class: 'label', text: `${c.uri}${c.mimeType ? `  ${c.mimeType}` : ''}` }), renderResourceContents(c));
    box.dataset.readAt = String(Date.now());
  } catch (e) { clear(box).append(h('pre', { class: 'notice', text: errorText(e) })); }
}

function onUpdated(uri) {
  const list = $('#resource-updates');
  list.prepend(h('li', { class: 'update', dataset: { uri } }, `${new Date().toLocaleTimeString()}  updated  `, h('code', { text: uri })));
  while (list.children.length > 200) list.lastChild.remove();
  if (state.shownResource === uri) readResource(uri);
}

function onChanged(what) {
  addLog({ level: 'info', logger: 'inspector', data: `${what} list changed` });
  if (what === 'tools') loadTools();
  if (what === 'resources') loadResources();
  if (what === 'prompts') loadPrompts();
}

// ---------- prompts ----------
async function loadPrompts() {
  const list = clear($('#prompt-list'));
  if (state.info && !state.info.capabilities?.prompts) { list.append(h('li', { class: 'muted', text: 'this server has no prompts' })); return; }
  let prompts;
  try { prompts = await send('prompts'); } catch (e) { list.append(h('li', { class: 'notice', text: errorText(e) })); return; }
  for (const p of prompts) {
    const li = h('li', { class: 'prompt', dataset: { name: p.name } }, h('span', { class: 'name', text: p.title || p.name }), h('span', { class: 'desc muted', text: p.description || '' }));
    li.addEventListener('click', () => { for (const x of $$('#prompt-list li.selected')) x.classList.remove('selected'); li.classList.add('selected'); showPrompt(p); });
    list.append(li);
  }
}

function showPrompt(p) {
  const d = clear($('#prompt-detail'));
  d.append(h('h2', { text: p.title || p.name }));
  if (p.description) d.append(h('p', { text: p.description }));
  const inputs = {};
  const values = () => Object.fromEntries(Object.entries(inputs).filter(([, i]) => i.value !== '').map(([k, i]) => [k, i.value]));
  const form = h('form', { class: 'schema', onsubmit: (e) => e.preventDefault() });
  for (const a of p.arguments || []) {
    const c = completingInput(a.name, { type: 'ref/prompt', name: p.name }, values);
    inputs[a.name] = c.input;
    form.append(h('div', { class: 'field' }, h('label', { class: 'key' }, a.name, a.required ? h('span', { class: 'req', text: '*' }) : null), a.description ? h('div', { class: 'hint', text: a.description }) : null, c.el));
  }
  const errors = h('div', { class: 'errors' });
  const out = h('div', { id: 'prompt-result' });
  const btn = h('button', { type: 'button', class: 'primary', text: 'Get', id: 'prompt-get' });
  btn.addEventListener('click', async () => {
    const missing = (p.arguments || []).filter((a) => a.required && !inputs[a.name].value).map((a) => `${a.name}: required`);
    errors.textContent = missing.join('\n');
    if (missing.length) return;
    clear(out);
    try {
      const r = await send('prompt', { name: p.name, arguments: values() });
      if (r.description) out.append(h('p', { class: 'muted', text: r.description }));
      for (const m of r.messages || []) out.append(h('div', { class: 'message' }, h('div', { class: 'label', text: m.role }), renderContent(m.content || {})));
    } catch (e) { out.append(h('pre', { class: 'notice', text: errorText(e) })); }
  });
  form.append(btn);
  d.append(form, errors, out);
}

// ---------- skills ----------
async function loadSkills() {
  const list = clear($('#skill-list'));
  let skills;
  try { skills = await send('skills'); } catch (e) { list.append(h('li', { class: 'notice', text: errorText(e) })); return; }
  if (!skills.length) { list.append(h('li', { class: 'muted', text: 'this server offers no skills' })); return; }
  for (const s of skills) {
    const name = s.frontmatter?.name || s.uri;
    const li = h('li', { class: 'skill', dataset: { uri: s.uri } }, h('span', { class: 'name', text: name }), h('span', { class: 'desc muted', text: s.frontmatter?.description || s.uri }));
    li.addEventListener('click', async () => {
      const d = clear($('#skill-detail'));
      d.append(h('h2', { text: name }), h('code', { text: s.uri }));
      try { const r = await send('skill', { uri: s.uri }); d.append(h('pre', { class: 'skill-md', text: r.skillMd })); } catch (e) { d.append(h('pre', { class: 'notice', text: errorText(e) })); }
    });
    list.append(li);
  }
}

// ---------- roots ----------
function renderRoots() {
  const body = clear($('#root-table tbody'));
  state.roots.forEach((r, i) => {
    const uri = h('input', { type: 'text', value: r.uri, placeholder: 'file:///path' });
    const name = h('input', { type: 'text', value: r.name || '' });
    uri.addEventListener('input', () => { state.roots[i].uri = uri.value; });
    name.addEventListener('input', () => { state.roots[i].name = name.value; });
    body.append(h('tr', {}, h('td', {}, uri), h('td', {}, name), h('td', {}, h('button', { type: 'button', text: 'Remove', onclick: () => { state.roots.splice(i, 1); renderRoots(); } }))));
  });
}

// ---------- server requests (sampling, elicitation) ----------
function showAsk(ev) {
  if ($(`.ask[data-ask="${ev.ask}"]`)) return;
  const p = ev.params || {};
  const box = h('div', { class: 'ask', dataset: { ask: String(ev.ask), kind: ev.kind } });
  const answer = (result, error) => send('answer', { ask: ev.ask, result, error }).then(() => box.remove(), (e) => problem(e));
  if (ev.kind === 'sampling') {
    box.append(h('h4', { text: 'The server asks the model (sampling)' }));
    if (p.systemPrompt) box.append(h('div', { class: 'label', text: 'system' }), h('pre', { text: p.systemPrompt }));
    for (const m of p.messages || []) {
      const contents = Array.isArray(m.content) ? m.content : [m.content || {}];
      box.append(h('div', { class: 'label', text: m.role }), ...contents.map(renderContent));
    }
    box.append(h('div', { class: 'muted', text: `maxTokens ${p.maxTokens ?? ''}` }));
    const text = h('textarea', { class: 'ask-text', placeholder: 'The model\'s answer' });
    const model = h('input', { type: 'text', class: 'ask-model', value: 'oxmcp-inspector' });
    box.append(text, h('label', { class: 'muted' }, 'model ', model), h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'primary ask-send', text: 'Send answer', onclick: () => answer({ role: 'assistant', content: { type: 'text', text: text.value }, model: model.value || 'oxmcp-inspector', stopReason: 'endTurn' }) }),
      h('button', { type: 'button', class: 'danger ask-reject', text: 'Reject', onclick: () => answer(undefined, 'the person at the inspector rejected the request') })));
  } else if (ev.kind === 'elicitation' && p.mode === 'url') {
    box.append(h('h4', { text: 'The server asks you to open a link' }), h('p', { text: p.message }), h('code', { class: 'ask-url', text: p.url }));
    box.append(h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'primary ask-accept', text: 'Open and accept', disabled: !/^https?:\/\//i.test(p.url || ''), onclick: () => { window.open(p.url, '_blank', 'noopener,noreferrer'); answer({ action: 'accept' }); } }),
      h('button', { type: 'button', class: 'ask-decline', text: 'Decline', onclick: () => answer({ action: 'decline' }) }),
      h('button', { type: 'button', class: 'ask-cancel', text: 'Cancel', onclick: () => answer({ action: 'cancel' }) })));
  } else {
    box.append(h('h4', { text: 'The server asks you (elicitation)' }), h('p', { class: 'ask-message', text: p.message }));
    const form = schemaForm(p.requestedSchema, `ask-${ev.ask}`);
    const errors = h('div', { class: 'errors' });
    box.append(form.el, errors, h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'primary ask-accept', text: 'Accept', onclick: () => { const v = form.value(); errors.textContent = v.errors ? v.errors.join('\n') : ''; if (!v.errors) answer({ action: 'accept', content: v.value }); } }),
      h('button', { type: 'button', class: 'ask-decline', text: 'Decline', onclick: () => answer({ action: 'decline' }) }),
      h('button', { type: 'button', class: 'ask-cancel', text: 'Cancel', onclick: () => answer({ action: 'cancel' }) })));
  }
  $('#asks').append(box);
}

// The authorization server's page of a log-in started here: a link to open (and an attempt to
// open it at once, which a browser may block as a pop-up).
function showAuthorize(url) {
  if (!/^https?:\/\//i.test(url)) return;
  for (const old of $$('.ask[data-kind=authorize]')) old.remove();
  const box = h('div', { class: 'ask', dataset: { kind: 'authorize' } },
    h('h4', { text: 'Log in' }),
    h('p', { text: 'Authorize the inspector at the server\'s authorization server; this page reconnects when it is done.' }),
    h('a', { class: 'authorize-link', href: url, target: '_blank', rel: 'noopener noreferrer', text: 'Open the authorization page' }),
    h('div', { class: 'buttons' }, h('button', { type: 'button', text: 'Close', onclick: () => box.remove() })));
  $('#asks').append(box);
}

// ---------- traffic and logs ----------
const MAX_ROWS = 5000;
const MAX_KEPT = 20000;

function describeMsg(msg) {
  if (!msg || typeof msg !== 'object') return { what: 'unparsable', kind: 'other' };
  if (Array.isArray(msg)) return { what: `batch of ${msg.length}`, kind: 'batch' };
  if (msg.method) return { what: msg.id !== undefined ? `${msg.method}  #${msg.id}` : msg.method, kind: msg.id !== undefined ? 'request' : 'notification', method: msg.method };
  if ('result' in msg) return { what: `result  #${msg.id}`, kind: 'response' };
  if ('error' in msg) return { what: `error ${msg.error?.code}  #${msg.id}`, kind: 'error' };
  return { what: 'message', kind: 'other' };
}

function addTraffic(ev) {
  if (state.seen.has(ev.n)) return;
  state.seen.add(ev.n);
  state.traffic.push(ev);
  // The page keeps the newest MAX_KEPT messages (what it exports), and shows MAX_ROWS.
  while (state.traffic.length > MAX_KEPT) state.seen.delete(state.traffic.shift().n);
  $('#traffic-count').textContent = String(state.traffic.length);
  const d = describeMsg(ev.msg);
  let timing = '';
  const key = ev.msg && ev.msg.id !== undefined ? `${ev.msg.id}` : null;
  if (key !== null && d.kind === 'request') state.sentAt.set(`${ev.dir}:${key}`, ev.t);
  if (key !== null && (d.kind === 'response' || d.kind === 'error')) {
    const sent = `${ev.dir === 'in' ? 'out' : 'in'}:${key}`;
    const asked = state.sentAt.get(sent);
    if (asked !== undefined) timing = `${(ev.t - asked).toFixed(1)} ms`;
    state.sentAt.delete(sent);
  }
  // Requests never answered are forgotten, oldest first.
  while (state.sentAt.size > MAX_KEPT) state.sentAt.delete(state.sentAt.keys().next().value);
  ev.method = d.method; ev.timing = timing;
  const li = h('li', { class: `msg ${d.kind}`, dataset: { dir: ev.dir, kind: d.kind, method: d.method || '', n: String(ev.n) } });
  const row = h('div', { class: 'row' },
    h('span', { class: 'dir', text: ev.dir === 'out' ? '→' : '←', title: ev.dir === 'out' ? 'to the server' : 'from the server' }),
    h('span', { class: 'time', text: `${(ev.t / 1000).toFixed(3)} s` }),
    h('span', { class: 'what', text: d.what }),
    h('span', { class: 'size muted', text: `${ev.size} B` }),
    h('span', { class: 'timing muted', text: timing }));
  row.addEventListener('click', () => {
    li.classList.toggle('open');
    if (li.classList.contains('open') && !li.querySelector('.body')) {
      const text = pretty(ev.msg);
      li.append(h('div', { class: 'body' }, h('button', { type: 'button', text: 'Copy', onclick: () => navigator.clipboard?.writeText(text) }), h('pre', { text })));
    }
  });
  li.append(row);
  li.hidden = !trafficMatches(ev);
  const list = $('#traffic-list');
  list.append(li);
  while (list.children.length > MAX_ROWS) list.firstChild.remove();
}

function trafficMatches(ev) {
  const dir = $('#traffic-dir').value;
  if (dir && ev.dir !== dir) return false;
  const q = $('#traffic-filter').value.trim().toLowerCase();
  if (!q) return true;
  if (!ev.text) ev.text = JSON.stringify(ev.msg).toLowerCase();
  return ev.text.includes(q);
}

function refilterTraffic() {
  const byN = new Map(state.traffic.map((e) => [String(e.n), e]));
  for (const li of $$('#traffic-list li.msg')) { const ev = byN.get(li.dataset.n); if (ev) li.hidden = !trafficMatches(ev); }
}

function addLog(p) {
  const data = typeof p.data === 'string' ? p.data : JSON.stringify(p.data);
  const list = $('#log-list');
  list.append(h('li', { class: `lvl-${p.level}` }, `${new Date().toLocaleTimeString()} ${p.level}${p.logger ? ` ${p.logger}` : ''}: ${data}`));
  while (list.children.length > 2000) list.firstChild.remove();
  list.scrollTop = list.scrollHeight;
}

// ---------- wiring ----------
function wire() {
  for (const b of $$('#tabs button')) b.addEventListener('click', () => showPanel(b.dataset.panel));
  $('#tool-filter').addEventListener('input', filterTools);
  $('#traffic-filter').addEventListener('input', refilterTraffic);
  $('#traffic-dir').addEventListener('change', refilterTraffic);
  $('#traffic-clear').addEventListener('click', () => { state.traffic = []; clear($('#traffic-list')); $('#traffic-count').textContent = '0'; });
  $('#traffic-export').addEventListener('click', () => {
    const lines = state.traffic.map((e) => JSON.stringify({ n: e.n, dir: e.dir, t_ms: e.t, size: e.size, message: e.msg })).join('\n');
    download('oxmcp-traffic.jsonl', `${lines}\n`);
  });
  $('#reconnect').addEventListener('click', () => send('reconnect').catch((e) => setStatus(errorText(e), 'bad')));
  $('#login').addEventListener('click', () => { setStatus('logging in: open the authorization page (bottom right)…'); send('login').catch((e) => setStatus(`log in failed: ${errorText(e)}`, 'bad')); });
  $('#ping').addEventListener('click', async () => {
    try { const r = await send('ping'); $('#ping-result').textContent = `pong in ${r.ms.toFixed(1)} ms`; } catch (e) { $('#ping-result').textContent = errorText(e); }
  });
  $('#log-level').addEventListener('change', (e) => {
    if (e.target.value) send('log_level', { level: e.target.value }).catch((err) => addLog({ level: 'error', logger: 'inspector', data: errorText(err) }));
  });
  $('#tasks-refresh').addEventListener('click', loadTasks);
  $('#root-add').addEventListener('click', () => { state.roots.push({ uri: 'file:///', name: '' }); renderRoots(); });
  $('#roots-apply').addEventListener('click', async () => {
    const roots = state.roots.filter((r) => r.uri).map((r) => (r.name ? { uri: r.uri, name: r.name } : { uri: r.uri }));
    try { await send('roots', { roots }); $('#roots-note').textContent = `${roots.length} root(s) offered`; } catch (e) { $('#roots-note').textContent = errorText(e); }
  });
  renderRoots();
  open();
}

document.addEventListener('DOMContentLoaded', wire);
