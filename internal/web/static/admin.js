// The admin page: every queue's line, admission and tokens, live, with
// pause/resume, the rate and a form with every setting; and the products,
// with their stock and orders, created and restocked here. The page itself
// is public; what it shows comes from the admin JSON API (/admin/v1), called
// with the admin token the operator pastes in. The token stays in this
// tab's sessionStorage only.
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
  // Gateway mode sells nothing itself: no products to show.
  const sells = document.documentElement.dataset.mode !== 'gateway';
  const TOKEN_KEY = 'waitroom:admin-token';
  const SAMPLE_MS = 2000;          // one sample of every queue per refresh
  const WINDOW_MS = 5 * 60 * 1000; // the chart's span
  const PRODUCTS_MS = 5000;        // the products list's refresh

  // QUEUE_SETTINGS is every per-queue setting the queue form shows, and the
  // only place the page lists them: the field of the admin API's queue
  // config (PUT/PATCH /admin/v1/queues/{queue}, the same name in its
  // answer), its label and help (message keys; t() shows a text that is no
  // key as it is, so a table sent by the server may carry plain texts), its
  // type (number, integer, boolean) and range, as openapi.yaml's
  // QueueConfig states them. The form is built from this table alone:
  // replace it with one the server declares and nothing else changes.
  const QUEUE_SETTINGS = [
    { name: 'ratePerSecond', label: 'settingRate', help: 'settingRateHelp', type: 'number', min: 0.001, max: 1000000 },
    { name: 'batchSize', label: 'settingBatch', help: 'settingBatchHelp', type: 'integer', min: 1, max: 10000 },
    { name: 'intervalMs', label: 'settingInterval', help: 'settingIntervalHelp', type: 'integer', min: 1, max: 60000 },
    { name: 'capacity', label: 'settingCapacity', help: 'settingCapacityHelp', type: 'integer', min: 1, max: 100000000 },
    { name: 'tokenTtlSeconds', label: 'settingTokenTtl', help: 'settingTokenTtlHelp', type: 'integer', min: 1, max: 86400 },
    { name: 'maxActiveTokens', label: 'settingMaxActive', help: 'settingMaxActiveHelp', type: 'integer', min: 0, max: 100000000 },
    { name: 'paused', label: 'settingPaused', help: 'settingPausedHelp', type: 'boolean' },
  ];

  // The chart's plot area inside its 600×170 viewBox.
  const PLOT = { left: 44, right: 596, top: 10, bottom: 146 };

  const cards = new Map(); // queue name → card
  const rows = new Map();  // product id → row
  let timer = 0;
  let productsTimer = 0;
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

  // answered handles what every admin call may answer: false when the
  // token is wrong (signed out) or the admin API is off.
  function answered(r) {
    if (r.res.status === 401) {
      signOut('tokenWrong');
      return false;
    }
    if (r.res.status === 403) {
      signOut('adminDisabled');
      return false;
    }
    return true;
  }

  function errorText(r) {
    return r.data.error?.message || String(r.res.status);
  }

  // send makes a change through the admin API and returns the answer's
  // data, or null after showing in msg why it failed.
  async function send(msg, method, path, body) {
    say(msg, '');
    let r;
    try {
      r = await api(method, path, body);
    } catch (err) {
      say(msg, err.message, true);
      return null;
    }
    if (!answered(r)) return null;
    if (!r.res.ok) {
      say(msg, errorText(r), true);
      return null;
    }
    return r.data;
  }

  function signOut(reasonKey) {
    clearTimeout(timer);
    clearTimeout(productsTimer);
    setToken('');
    if ($('queue-dialog').open) $('queue-dialog').close();
    for (const c of cards.values()) c.el.remove();
    cards.clear();
    for (const row of rows.values()) row.el.remove();
    rows.clear();
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
    showScreen();
  }

  // ------------------------------------------------------------ screens

  // showScreen shows the screen the address names (#products, else the
  // queues), so a reload or a link keeps it.
  function showScreen() {
    const products = sells && location.hash === '#products';
    $('queues-screen').hidden = products;
    $('products-screen').hidden = !products;
    for (const [id, on] of [['tab-queues', !products], ['tab-products', products]]) {
      if (on) $(id).setAttribute('aria-current', 'page');
      else $(id).removeAttribute('aria-current');
    }
    clearTimeout(productsTimer);
    if (products && !$('dash').hidden) refreshProducts();
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
    if (!answered(r)) return;
    if (!r.res.ok) return failed(errorText(r));

    $('dash-error').hidden = true;
    const now = Date.now();
    const list = r.data.queues || [];
    const newCardSeeded = (name) => {
      const c = newCard(name);
      seed(c);
      return c;
    };
    showAll(cards, $('queues'), list, (q) => q.queue, newCardSeeded, (c, q) => {
      c.samples.push({ t: now, v: q.length });
      while (c.samples.length && c.samples[0].t < now - WINDOW_MS) c.samples.shift();
      render(c, q, now);
    });
    $('no-queues').hidden = list.length > 0;
    $('queue-names').replaceChildren(...list.map((q) => new Option('', q.queue)));
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
    timer = loadFailed('dash-error', t('loadError', { msg }), refresh, SAMPLE_MS);
  }

  // loadFailed shows why a list could not be loaded, and tries again.
  function loadFailed(bannerId, text, retry, ms) {
    const e = $(bannerId);
    e.textContent = text;
    e.hidden = false;
    return setTimeout(retry, ms);
  }

  // showAll keeps one element per item of list in box, in list's order:
  // made by make(key) the first time (and kept in things by key), updated by
  // update(thing, item) every time, removed once the item is gone.
  function showAll(things, box, list, keyOf, make, update) {
    const wanted = list.map((item) => {
      const key = keyOf(item);
      let thing = things.get(key);
      if (!thing) {
        thing = make(key);
        things.set(key, thing);
      }
      update(thing, item);
      return thing.el;
    });
    const keys = new Set(list.map(keyOf));
    for (const [key, thing] of things) {
      if (!keys.has(key)) {
        thing.el.remove();
        things.delete(key);
      }
    }
    // Move only what is out of place (a new element goes in before the
    // ones after it, which stay put): moving an element takes the focus
    // away from someone typing in it.
    wanted.forEach((el, i) => {
      if (box.children[i] !== el) box.insertBefore(el, box.children[i] || null);
    });
  }

  // fromTemplate clones a template's element, with a query helper and its
  // data-field elements by name.
  function fromTemplate(id) {
    const el = $(id).content.firstElementChild.cloneNode(true);
    return {
      el,
      q: (sel) => el.querySelector(sel),
      field: (f) => el.querySelector('[data-field="' + f + '"]'),
    };
  }

  // ------------------------------------------------------------ cards

  function newCard(name) {
    const { el, q, field } = fromTemplate('queue-template');
    const c = {
      name, el, field, samples: [], paused: false, rateDirty: false,
      badge: q('.badge'), pause: q('.pause-button'), rateForm: q('.rate-form'),
      rateInput: q('.rate-input'), message: q('.qmessage'), svg: q('svg'),
      grid: q('.chart-grid'), line: q('.chart-line'), area: q('.chart-area'), start: q('.chart-x-start'),
    };
    el.dataset.queue = name;
    q('.qname').textContent = name;
    c.pause.addEventListener('click', () => change(c, { paused: !c.paused }));
    q('.settings-button').addEventListener('click', () => openQueueForm(c));
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
    const q = await send(c.message, 'PATCH', '/queues/' + encodeURIComponent(c.name), patch);
    if (!q) return false;
    c.rateDirty = false;
    render(c, q, Date.now());
    note(c, t('saved'));
    return true;
  }

  function note(c, text, isError) {
    say(c.message, text, isError);
  }

  function say(el, text, isError) {
    el.textContent = text;
    el.classList.toggle('is-error', !!isError);
  }

  function render(c, q, now) {
    c.stats = q;
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

  // ------------------------------------------------------------ queue form

  // The form's fields, built once from QUEUE_SETTINGS: setting → input.
  const settingInputs = new Map();

  function buildQueueForm() {
    const box = $('queue-settings');
    for (const s of QUEUE_SETTINGS) {
      const id = 'setting-' + s.name;
      const input = document.createElement('input');
      input.id = id;
      input.name = s.name;
      if (s.type === 'boolean') {
        input.type = 'checkbox';
      } else {
        input.type = 'number';
        input.inputMode = s.type === 'integer' ? 'numeric' : 'decimal';
        input.step = s.type === 'integer' ? '1' : 'any';
        if (s.min !== undefined) input.min = String(s.min);
        if (s.max !== undefined) input.max = String(s.max);
      }
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = t(s.label);
      const help = document.createElement('p');
      help.className = 'field-info';
      help.id = id + '-help';
      help.textContent = t(s.help);
      input.setAttribute('aria-describedby', help.id);
      const field = document.createElement('div');
      field.className = s.type === 'boolean' ? 'field field-check' : 'field';
      field.dataset.setting = s.name;
      if (s.type === 'boolean') field.append(input, label, help);
      else field.append(label, input, help);
      box.append(field);
      settingInputs.set(s.name, input);
    }
  }

  function readSetting(s) {
    const input = settingInputs.get(s.name);
    if (s.type === 'boolean') return input.checked;
    return input.value === '' ? undefined : Number(input.value);
  }

  // editing is the card whose settings the form shows (null: a new queue);
  // openedWith is what the form showed when it opened, so that Save sends
  // only what the operator changed and leaves alone what others change
  // meanwhile (a pause from another tab, say).
  let editing = null;
  let openedWith = {};

  function openQueueForm(c) {
    editing = c || null;
    const form = $('queue-form');
    form.reset();
    say($('queue-message'), '');
    $('queue-name-field').hidden = !!c;
    $('queue-name').disabled = !!c; // not sent, and not validated, when editing
    $('queue-dialog-heading').textContent = c ? t('queueDialogEdit', { name: c.name }) : t('queueDialogNew');
    openedWith = {};
    for (const s of QUEUE_SETTINGS) {
      const input = settingInputs.get(s.name);
      const v = c ? c.stats[s.name] : undefined;
      if (s.type === 'boolean') input.checked = !!v;
      else {
        input.value = v === undefined ? '' : String(v);
        input.placeholder = c ? '' : t('settingDefault');
      }
      openedWith[s.name] = readSetting(s);
    }
    $('queue-dialog').showModal();
  }

  async function saveQueueForm(e) {
    e.preventDefault();
    const msg = $('queue-message');
    const body = {};
    for (const s of QUEUE_SETTINGS) {
      const v = readSetting(s);
      if (v !== undefined && (!editing || v !== openedWith[s.name])) body[s.name] = v;
    }
    let name, method;
    if (editing) {
      name = editing.name;
      method = 'PATCH';
      if (Object.keys(body).length === 0) {
        $('queue-dialog').close();
        return;
      }
    } else {
      name = $('queue-name').value.trim();
      method = 'PUT';
      // PUT replaces a queue's whole config: never by accident from here.
      if (cards.has(name)) {
        say(msg, t('queueExists', { name }), true);
        return;
      }
    }
    const q = await send(msg, method, '/queues/' + encodeURIComponent(name), body);
    if (!q) return;
    $('queue-dialog').close();
    if (editing) {
      render(editing, q, Date.now());
      note(editing, t('saved'));
    } else {
      refresh();
    }
  }

  // ------------------------------------------------------------ products

  async function refreshProducts() {
    clearTimeout(productsTimer);
    const list = [];
    let after = '';
    try {
      // Every page: a shop's products fit in a few.
      for (let page = 0; page < 50; page++) {
        const r = await api('GET', '/products?limit=1000' + (after ? '&after=' + encodeURIComponent(after) : ''));
        if (!answered(r)) return;
        if (!r.res.ok) return productsFailed(errorText(r));
        list.push(...(r.data.products || []));
        after = r.data.next;
        if (!after) break;
      }
    } catch (err) {
      return productsFailed(err.message);
    }
    if ($('products-screen').hidden || $('dash').hidden) return;
    $('products-error').hidden = true;
    showAll(rows, $('product-rows'), list, (p) => p.id, newRow, renderRow);
    $('no-products').hidden = list.length > 0;
    $('products-updated').textContent = t('updatedAt', { time: new Date().toLocaleTimeString(lang) });
    productsTimer = setTimeout(refreshProducts, PRODUCTS_MS);
  }

  function productsFailed(msg) {
    productsTimer = loadFailed('products-error', t('productsLoadError', { msg }), refreshProducts, PRODUCTS_MS);
  }

  function newRow(id) {
    const { el, q, field } = fromTemplate('product-row-template');
    const row = { id, el, field, input: q('.restock-input'), message: q('.restock-message') };
    el.dataset.product = id;
    q('.pid').textContent = id;
    q('.restock-label').textContent = t('restockLabel', { id });
    q('.restock-form').addEventListener('submit', (e) => {
      e.preventDefault();
      restock(row, Number(row.input.value));
    });
    return row;
  }

  function renderRow(row, p) {
    row.field('name').textContent = p.name;
    row.field('queue').textContent = p.queue;
    row.field('stock').textContent = numbers.format(p.stock);
    row.field('orders').textContent = numbers.format(p.orders);
  }

  async function restock(row, n) {
    const p = await send(row.message, 'POST', '/products/' + encodeURIComponent(row.id) + '/restock', { quantity: n });
    if (!p) return;
    row.input.value = '';
    row.field('stock').textContent = numbers.format(p.stock);
    say(row.message, t('restocked', { n: numbers.format(n), stock: numbers.format(p.stock) }));
  }

  async function createProduct(e) {
    e.preventDefault();
    const msg = $('product-message');
    const id = $('new-product-id').value.trim();
    // PUT replaces a product's stock: a sale's orders would be overwritten.
    if (rows.has(id)) {
      say(msg, t('productExists', { id }), true);
      return;
    }
    const body = {
      name: $('new-product-name').value.trim(),
      stock: Number($('new-product-stock').value),
      queue: $('new-product-queue').value.trim(),
    };
    if (!await send(msg, 'PUT', '/products/' + encodeURIComponent(id), body)) return;
    $('product-form').reset();
    say(msg, t('productCreated', { id }));
    refreshProducts();
  }

  // ------------------------------------------------------------ start

  buildQueueForm();
  $('tabs').hidden = !sells;
  $('new-queue').addEventListener('click', () => openQueueForm(null));
  $('queue-form').addEventListener('submit', saveQueueForm);
  $('queue-cancel').addEventListener('click', () => $('queue-dialog').close());
  $('product-form').addEventListener('submit', createProduct);
  window.addEventListener('hashchange', showScreen);

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
