// oxmcp inspect's page, 1 of 4 (dom.js, forms.js, render.js, app.js, loaded in that order;
// plain JavaScript, no build step): small DOM helpers. Everything a server sends is put in
// the page as text (textContent) or attributes, never as HTML.
'use strict';

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
