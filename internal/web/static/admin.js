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

  function signIn() {
    $('login').hidden = true;
    $('login-error').textContent = '';
    $('dash').hidden = false;
    $('sign-out').hidden = false;
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
      c.samples.push({ t: now, v: q.length });
      while (c.samples.length && c.samples[0].t < now - WINDOW_MS) c.samples.shift();
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
    const first = c.samples.length ? c.samples[0].t : now;
    const earlier = (r.data.points || [])
      .map((p) => ({ t: Date.parse(p.at) - skew, v: p.length }))
      .filter((s) => s.t < first && s.t >= now - WINDOW_MS);
    if (!earlier.length) return;
    c.samples.unshift(...earlier);
    draw(c, now, c.samples[c.samples.length - 1].v);
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
    const c = {
      name, el, samples: [], paused: false, rateDirty: false,
      field: (f) => el.querySelector('[data-field="' + f + '"]'),
      badge: q('.badge'), pause: q('.pause-button'), rateForm: q('.rate-form'),
      rateInput: q('.rate-input'), message: q('.qmessage'), svg: q('svg'),
      grid: q('.chart-grid'), line: q('.chart-line'), area: q('.chart-area'), start: q('.chart-x-start'),
    };
    el.dataset.queue = name;
    q('.qname').textContent = name;
    c.pause.addEventListener('click', () => change(c, { paused: !c.paused }));
    c.rateInput.addEventListener('input', () => { c.rateDirty = true; });
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
    c.field('configured').textContent = t('rateConfigured', { n: rates.format(q.ratePerSecond) });
    c.field('measured-rate').textContent = t('rateMeasured', { n: rates.format(q.measuredRatePerSecond) });
    c.field('admitted').textContent = t('admittedTotal', { n: numbers.format(q.admittedTotal) });
    c.field('derivation').textContent = q.rateDerivation || '';

    if (!c.rateDirty && document.activeElement !== c.rateInput) c.rateInput.value = String(q.ratePerSecond);
    draw(c, now, q.length);
  }

  // ------------------------------------------------------------ chart

  function niceMax(v) {
    if (v <= 10) return 10;
    const pow = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * pow >= v) return m * pow;
    return 10 * pow;
  }

  // draw plots the samples of the last minutes: the span grows a minute at
  // a time from the page's first sample up to WINDOW_MS, so a fresh page
  // shows a useful chart at once rather than a sliver at the right edge.
  function draw(c, now, current) {
    const minutes = Math.min(WINDOW_MS / 60000, Math.max(1, Math.ceil((now - c.samples[0].t) / 60000)));
    const span = minutes * 60000;
    const max = niceMax(Math.max(...c.samples.map((s) => s.v), 0));
    const w = PLOT.right - PLOT.left;
    const h = PLOT.bottom - PLOT.top;
    const x = (ts) => PLOT.left + Math.max(0, (ts - (now - span)) / span) * w;
    const y = (v) => PLOT.bottom - (v / max) * h;

    c.grid.replaceChildren();
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
      label.textContent = numbers.format(v);
      c.grid.append(line, label);
    }

    const pts = c.samples.map((s) => x(s.t).toFixed(1) + ' ' + y(s.v).toFixed(1));
    if (pts.length === 1) pts.push(pts[0]); // one sample: a dot
    const d = 'M' + pts.join(' L');
    c.line.setAttribute('d', d);
    const left = x(c.samples[0].t).toFixed(1);
    c.area.setAttribute('d', d + ' L' + x(now).toFixed(1) + ' ' + PLOT.bottom + ' L' + left + ' ' + PLOT.bottom + ' Z');
    c.start.textContent = t('chartAgo', { n: minutes });
    c.svg.setAttribute('aria-label', t('chartAria', { m: minutes, n: numbers.format(current) }));
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
