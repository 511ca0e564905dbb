// oxmcp inspect's page, 4 of 4: the connection to the local app (one WebSocket: {id, op, ...}
// out, {re: id, ok | error} and {ev: ...} events in), the panels, and the wiring.
'use strict';

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

// The page's key: given once in the address's fragment by the token's answer, then kept
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
