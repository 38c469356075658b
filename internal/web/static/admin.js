// The admin page: every queue's line, admission and tokens, live, with
// pause/resume and the rate. The page itself is public; what it shows comes
// from the admin JSON API (/admin/v1), called with the admin token the
// operator pastes in. The token stays in this tab's sessionStorage only.
(() => {
  'use strict';

  const M = JSON.parse(document.getElementById('messages').textContent);
  const lang = document.documentElement.lang || 'en';
  const numbers = new Intl.NumberFormat(lang);
  const rates = new Intl.NumberFormat(lang, { maximumFractionDigits: 1 });
  const $ = (id) => document.getElementById(id);
  const SVG = 'http://www.w3.org/2000/svg';

  // Where the admin API lives: "" for waitroom serve, the prefix in gateway mode.
  const base = document.documentElement.dataset.base || '';
  const TOKEN_KEY = 'waitroom:admin-token';
  const SAMPLE_MS = 2000;          // one sample of every queue per refresh
  const WINDOW_MS = 5 * 60 * 1000; // the chart's span

  // The chart's plot area inside its 600×170 viewBox.
  const PLOT = { left: 44, right: 596, top: 10, bottom: 146 };

  const cards = new Map(); // queue name → card
  // The server's declaration of the queue settings (GET
  // /admin/v1/queue-settings): each card's settings form is built from it,
  // so a setting added on the server appears here by itself.
  let settings = [];
  let timer = 0;
  let memoryToken = ''; // when sessionStorage is unavailable (private mode)

  function t(key, vars) {
    let s = M[key] ?? key;
    for (const [k, v] of Object.entries(vars || {})) s = s.split('{' + k + '}').join(String(v));
    return s;
  }

  // ------------------------------------------------------------ token

  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return memoryToken; }
  }
  function setToken(v) {
    memoryToken = v;
    try {
      if (v) sessionStorage.setItem(TOKEN_KEY, v);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch { /* memoryToken holds it */ }
  }

  async function api(method, path, body) {
    const headers = { Authorization: 'Bearer ' + getToken(), Accept: 'application/json' };
    if (body) headers['Content-Type'] = 'application/json';
    const res = await fetch(base + '/admin/v1' + path, {
      method, headers, cache: 'no-store', body: body ? JSON.stringify(body) : undefined,
    });
    const data = await res.json().catch(() => ({}));
    return { res, data };
  }

  function signOut(reasonKey) {
    clearTimeout(timer);
    setToken('');
    for (const c of cards.values()) c.el.remove();
    cards.clear();
    $('dash').hidden = true;
    $('sign-out').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = reasonKey ? t(reasonKey) : '';
    $('token').value = '';
    $('token').focus();
  }

  async function signIn() {
    $('login').hidden = true;
    $('login-error').textContent = '';
    $('dash').hidden = false;
    $('sign-out').hidden = false;
    try {
      const r = await api('GET', '/queue-settings');
      if (r.res.ok) settings = r.data.settings || [];
    } catch { /* the cards come without their settings form */ }
    refresh();
  }

  // ------------------------------------------------------------ refresh

  async function refresh() {
    clearTimeout(timer);
    let r;
    try {
      r = await api('GET', '/queues');
    } catch (e) {
      return failed(e.message);
    }
    if (r.res.status === 401) return signOut('tokenWrong');
    if (r.res.status === 403) return signOut('adminDisabled');
    if (!r.res.ok) return failed(r.data.error?.message || String(r.res.status));

    $('dash-error').hidden = true;
    const now = Date.now();
    const list = r.data.queues || [];
    const wanted = [];
    for (const q of list) {
      let c = cards.get(q.queue);
      if (!c) {
        c = newCard(q.queue);
        cards.set(q.queue, c);
        seed(c);
      }
      for (const [series, v] of [[c.samples, q.length], [c.rates, q.effectiveRatePerSecond]]) {
        series.push({ t: now, v });
        while (series.length && series[0].t < now - WINDOW_MS) series.shift();
      }
      render(c, q, now);
      wanted.push(c.el);
    }
    for (const [name, c] of cards) {
      if (!list.some((q) => q.queue === name)) {
        c.el.remove();
        cards.delete(name);
      }
    }
    // Re-append only when the order changed: moving a card would take the
    // focus away from someone typing a rate in it.
    const grid = $('queues');
    if (wanted.some((el, i) => grid.children[i] !== el)) grid.append(...wanted);
    $('no-queues').hidden = list.length > 0;
    $('updated-text').textContent = t('updatedAt', { time: new Date(now).toLocaleTimeString(lang) });
    timer = setTimeout(refresh, SAMPLE_MS);
  }

  // seed fills a new card's chart with the minutes the server sampled before
  // this page was opened.
  async function seed(c) {
    let r;
    try {
      r = await api('GET', '/queues/' + encodeURIComponent(c.name) + '/history');
    } catch {
      return; // the chart starts now instead
    }
    if (!r.res.ok || !cards.has(c.name)) return;
    const now = Date.now();
    const skew = (Date.parse(r.res.headers.get('Date') || '') - now) || 0; // server clock ahead of ours
    const before = (series, points) => {
      const first = series.length ? series[0].t : now;
      return points.filter((s) => s.t < first && s.t >= now - WINDOW_MS);
    };
    const lengths = before(c.samples, (r.data.points || []).map((p) => ({ t: Date.parse(p.at) - skew, v: p.length })));
    // The rate: the instance's samples, and every change (each instance's
    // decisions, kept in the store) as a point of its own.
    const rates = before(c.rates, [
      ...(r.data.points || []).map((p) => ({ t: Date.parse(p.at) - skew, v: p.effectiveRatePerSecond })),
      ...(r.data.rateChanges || []).map((p) => ({ t: Date.parse(p.at) - skew, v: p.ratePerSecond })),
    ].sort((a, b) => a.t - b.t));
    c.samples.unshift(...lengths);
    c.rates.unshift(...rates);
    if (c.samples.length) drawLength(c, now);
    if (c.rates.length) drawRate(c, now);
  }

  function failed(msg) {
    const e = $('dash-error');
    e.textContent = t('loadError', { msg });
    e.hidden = false;
    timer = setTimeout(refresh, SAMPLE_MS);
  }

  // ------------------------------------------------------------ cards

  function newCard(name) {
    const el = $('queue-template').content.firstElementChild.cloneNode(true);
    const q = (sel) => el.querySelector(sel);
    const chart = (fig) => ({
      svg: fig.querySelector('svg'), grid: fig.querySelector('.chart-grid'), line: fig.querySelector('.chart-line'),
      area: fig.querySelector('.chart-area'), start: fig.querySelector('.chart-x-start'),
    });
    const c = {
      name, el, samples: [], rates: [], paused: false, rateDirty: false,
      field: (f) => el.querySelector('[data-field="' + f + '"]'),
      badge: q('.badge'), pause: q('.pause-button'), rateForm: q('.rate-form'),
      rateInput: q('.rate-input'), message: q('.qmessage'),
      lengthChart: chart(q('.chart:not(.chart-rate)')), rateChart: chart(q('.chart-rate')),
    };
    el.dataset.queue = name;
    q('.qname').textContent = name;
    c.pause.addEventListener('click', () => change(c, { paused: !c.paused }));
    c.rateInput.addEventListener('input', () => { c.rateDirty = true; });
    buildSettingsForm(c);
    c.rateForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const v = Number(c.rateInput.value);
      if (!(v > 0)) {
        note(c, t('rateInvalid'), true);
        return;
      }
      change(c, { ratePerSecond: v }).then((ok) => { if (ok) c.rateDirty = false; });
    });
    return c;
  }

  // change PATCHes the queue and shows the answer at once.
  async function change(c, patch) {
    note(c, '');
    let r;
    try {
      r = await api('PATCH', '/queues/' + encodeURIComponent(c.name), patch);
    } catch (e) {
      note(c, e.message, true);
      return false;
    }
    if (r.res.status === 401) {
      signOut('tokenWrong');
      return false;
    }
    if (!r.res.ok) {
      note(c, r.data.error?.message || String(r.res.status), true);
      return false;
    }
    c.rateDirty = false;
    c.settingsDirty = false;
    render(c, r.data, Date.now());
    note(c, t('saved'));
    return true;
  }

  function note(c, text, isError) {
    c.message.textContent = text;
    c.message.classList.toggle('is-error', !!isError);
  }

  function render(c, q, now) {
    c.paused = q.paused;
    c.badge.textContent = q.paused ? t('badgePaused') : t('badgeRunning');
    c.badge.classList.toggle('is-paused', q.paused);
    c.pause.textContent = q.paused ? t('resume') : t('pause');
    c.pause.classList.toggle('is-paused', q.paused);

    c.field('length').textContent = numbers.format(q.length);
    c.field('measured').textContent = rates.format(q.measuredRatePerSecond);
    c.field('active').textContent = q.maxActiveTokens > 0
      ? t('activeOfCap', { n: numbers.format(q.activeTokens), cap: numbers.format(q.maxActiveTokens) })
      : numbers.format(q.activeTokens);
    c.field('orders').textContent = numbers.format(q.consumedTotal);
    c.field('configured').textContent = q.adaptive
      ? t('rateAdaptive', { n: rates.format(q.effectiveRatePerSecond), target: numbers.format(q.targetLatencyMs) })
      : t('rateConfigured', { n: rates.format(q.ratePerSecond) });
    c.field('measured-rate').textContent = t('rateMeasured', { n: rates.format(q.measuredRatePerSecond) });
    c.field('admitted').textContent = t('admittedTotal', { n: numbers.format(q.admittedTotal) });
    c.field('abandoned').textContent = q.abandonAfterSeconds > 0 || q.abandonedTotal > 0
      ? t('abandonedTotal', { n: numbers.format(q.abandonedTotal) }) : '';
    c.field('derivation').textContent = (q.adaptive ? q.effectiveRateReason : q.rateDerivation) || '';
    const opening = c.field('opening');
    opening.hidden = !q.opensAt || q.preQueueLength === 0 && Date.parse(q.opensAt) < now;
    opening.textContent = q.opensAt ? t('opensAtNote', {
      time: new Date(q.opensAt).toLocaleString(lang), n: numbers.format(q.preQueueLength),
    }) : '';

    if (!c.rateDirty && document.activeElement !== c.rateInput) c.rateInput.value = String(q.ratePerSecond);
    fillSettingsForm(c, q);
    drawLength(c, now);
    drawRate(c, now);
  }

  // ------------------------------------------------------------ settings form

  const cap = (name) => name.charAt(0).toUpperCase() + name.slice(1);

  // buildSettingsForm makes one field per setting an admin may change.
  function buildSettingsForm(c) {
    const form = c.el.querySelector('.settings-form');
    const box = form.querySelector('.settings-fields');
    c.settingsForm = form;
    c.settingsDirty = false;
    c.current = {};
    for (const s of settings) {
      if (s.readOnly) continue;
      const id = 'set-' + c.name.replace(/[^A-Za-z0-9_-]/g, '_') + '-' + s.name;
      const wrap = document.createElement('div');
      wrap.className = 'field setting' + (s.kind === 'boolean' ? ' setting-check' : '');
      wrap.dataset.setting = s.name;
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = M['setting' + cap(s.name)] ?? s.name;
      const input = document.createElement('input');
      input.id = id;
      input.name = s.name;
      if (s.kind === 'boolean') {
        input.type = 'checkbox';
      } else if (s.kind === 'date-time') {
        input.type = 'datetime-local';
        input.step = '1';
      } else {
        input.type = 'number';
        input.inputMode = s.kind === 'number' ? 'decimal' : 'numeric';
        input.step = s.kind === 'number' ? 'any' : '1';
        if (s.maximum !== undefined) input.max = String(s.maximum);
        if (s.minimum !== undefined && !s.exclusiveMinimum) input.min = String(s.zeroIsOff ? 0 : s.minimum);
      }
      const help = document.createElement('p');
      help.className = 'setting-help';
      help.id = id + '-help';
      help.textContent = M['settingHelp' + cap(s.name)] ?? s.help;
      input.setAttribute('aria-describedby', help.id);
      input.addEventListener('input', () => { c.settingsDirty = true; });
      if (s.kind === 'boolean') wrap.append(input, label, help);
      else wrap.append(label, input, help);
      box.append(wrap);
    }
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      saveSettings(c);
    });
  }

  // localInput and fromLocalInput convert between an RFC 3339 time and the
  // browser's datetime-local value, which is in the viewer's time zone.
  function localInput(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    const pad = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }
  function fromLocalInput(v) {
    if (!v) return '';
    const d = new Date(v);
    return Number.isNaN(d.getTime()) ? null : d.toISOString();
  }

  // fillSettingsForm shows the queue's settings, unless someone is editing.
  function fillSettingsForm(c, q) {
    if (!c.settingsForm) return;
    for (const s of settings) c.current[s.name] = q[s.name];
    if (c.settingsDirty || c.settingsForm.contains(document.activeElement)) return;
    for (const s of settings) {
      const input = c.settingsForm.elements.namedItem(s.name);
      if (!input) continue;
      if (s.kind === 'boolean') input.checked = !!q[s.name];
      else if (s.kind === 'date-time') input.value = localInput(q[s.name]);
      else input.value = q[s.name] === undefined || q[s.name] === null ? '' : String(q[s.name]);
    }
  }

  // saveSettings PATCHes the fields that differ from the queue's values.
  async function saveSettings(c) {
    const patch = {};
    for (const s of settings) {
      const input = c.settingsForm.elements.namedItem(s.name);
      if (!input) continue;
      let v;
      if (s.kind === 'boolean') v = input.checked;
      else if (s.kind === 'date-time') v = fromLocalInput(input.value);
      else v = input.value.trim() === '' ? null : Number(input.value);
      if (v === null || (typeof v === 'number' && !Number.isFinite(v))) {
        note(c, t('settingInvalid', { name: M['setting' + cap(s.name)] ?? s.name }), true);
        input.focus();
        return;
      }
      const was = s.kind === 'date-time' ? (c.current[s.name] ? new Date(c.current[s.name]).toISOString() : '') : c.current[s.name];
      if (v !== was) patch[s.name] = v;
    }
    if (!Object.keys(patch).length) {
      note(c, t('settingsUnchanged'));
      return;
    }
    // A rate set in this form is a start for the adaptive rate, not an
    // override, when the adaptive box stays ticked.
    if ('ratePerSecond' in patch && c.settingsForm.elements.namedItem('adaptive')?.checked) patch.adaptive = true;
    if (await change(c, patch)) c.settingsDirty = false;
  }

  // ------------------------------------------------------------ chart

  function niceMax(v) {
    if (v <= 10) return 10;
    const pow = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * pow >= v) return m * pow;
    return 10 * pow;
  }

  function drawLength(c, now) {
    const current = c.samples[c.samples.length - 1].v;
    draw(c.lengthChart, c.samples, now, (m) => t('chartAria', { m, n: numbers.format(current) }), numbers);
  }

  function drawRate(c, now) {
    const current = c.rates[c.rates.length - 1].v;
    draw(c.rateChart, c.rates, now, (m) => t('rateChartAria', { m, n: rates.format(current) }), rates);
  }

  // draw plots the samples of the last minutes: the span grows a minute at
  // a time from the page's first sample up to WINDOW_MS, so a fresh page
  // shows a useful chart at once rather than a sliver at the right edge.
  function draw(ch, samples, now, aria, format) {
    const minutes = Math.min(WINDOW_MS / 60000, Math.max(1, Math.ceil((now - samples[0].t) / 60000)));
    const span = minutes * 60000;
    const max = niceMax(Math.max(...samples.map((s) => s.v), 0));
    const w = PLOT.right - PLOT.left;
    const h = PLOT.bottom - PLOT.top;
    const x = (ts) => PLOT.left + Math.max(0, (ts - (now - span)) / span) * w;
    const y = (v) => PLOT.bottom - (v / max) * h;

    ch.grid.replaceChildren();
    for (const v of [0, max / 2, max]) {
      const line = document.createElementNS(SVG, 'line');
      line.setAttribute('x1', PLOT.left);
      line.setAttribute('x2', PLOT.right);
      line.setAttribute('y1', y(v));
      line.setAttribute('y2', y(v));
      const label = document.createElementNS(SVG, 'text');
      label.setAttribute('x', PLOT.left - 8);
      label.setAttribute('y', y(v) + 4);
      label.setAttribute('text-anchor', 'end');
      label.textContent = format.format(v);
      ch.grid.append(line, label);
    }

    const pts = samples.map((s) => x(s.t).toFixed(1) + ' ' + y(s.v).toFixed(1));
    if (pts.length === 1) pts.push(pts[0]); // one sample: a dot
    const d = 'M' + pts.join(' L');
    ch.line.setAttribute('d', d);
    const left = x(samples[0].t).toFixed(1);
    ch.area.setAttribute('d', d + ' L' + x(now).toFixed(1) + ' ' + PLOT.bottom + ' L' + left + ' ' + PLOT.bottom + ' Z');
    ch.start.textContent = t('chartAgo', { n: minutes });
    ch.svg.setAttribute('aria-label', aria(minutes));
  }

  // ------------------------------------------------------------ start

  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const v = $('token').value.trim();
    if (!v) return;
    setToken(v);
    signIn();
  });
  $('sign-out').addEventListener('click', () => signOut(''));

  if (getToken()) signIn();
  else signOut('');
})();
