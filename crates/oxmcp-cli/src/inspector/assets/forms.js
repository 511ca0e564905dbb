// oxmcp inspect's page, 2 of 4: forms made from JSON Schemas (tool arguments, elicitations),
// the check of a value against its schema, and URI templates.
'use strict';

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
