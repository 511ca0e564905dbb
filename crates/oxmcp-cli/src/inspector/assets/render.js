// oxmcp inspect's page, 3 of 4: what the server sends, shown: contents and results, its
// requests to the person at the page (sampling, elicitation, log in), the traffic and the
// log.
'use strict';

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
