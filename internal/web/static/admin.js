// The admin page: every queue's line, admission, tokens and units left,
// live, with pause/resume, the rate, sold out and restock, its shadow line
// of suspects, each clearable, and a form with every setting, and new
// queues; and
// the products, with their stock and orders, created and restocked here.
// The page itself is public; what it shows comes from the admin JSON API
// (/admin/v1), called with the admin token the operator pastes in (the
// token stays in this tab's sessionStorage only) or, where the server has
// sign-in through the shop's identity provider, in the signed-in session:
// its cookie is HttpOnly (this script never sees it), and every change
// carries the session's CSRF value in a header.
(() => {
  'use strict';

  const M = JSON.parse(document.getElementById('messages').textContent);
  // The waiting page's languages ({code, name}): a message may have a text
  // in each.
  const pageLanguages = JSON.parse(document.getElementById('page-languages').textContent);
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

  // The chart's plot area inside its 600×170 viewBox.
  const PLOT = { left: 44, right: 596, top: 10, bottom: 146 };

  const cards = new Map(); // queue name → card
  const rows = new Map();  // product id → row
  // The server's declaration of the queue settings (GET
  // /admin/v1/queue-settings): each card's settings form and the new-queue
  // form are built from it, so a setting added on the server appears here
  // by itself.
  let settings = [];
  let timer = 0;
  let productsTimer = 0;
  let memoryToken = ''; // when sessionStorage is unavailable (private mode)
  // The signed-in session (GET /admin/sso/session: who, role, csrf), or
  // null when the page acts with a token.
  let session = null;
  const ROLES = ['viewer', 'operator', 'admin'];
  const allows = (held, need) => ROLES.indexOf(held) >= ROLES.indexOf(need || 'admin');

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

  // authHeaders are a request's credentials: the token, else the
  // session's CSRF value on a change (its cookie goes by itself).
  function authHeaders(method) {
    if (getToken()) return { Authorization: 'Bearer ' + getToken() };
    if (session && method !== 'GET') return { 'X-Waitroom-CSRF': session.csrf };
    return {};
  }

  async function api(method, path, body) {
    const headers = { ...authHeaders(method), Accept: 'application/json' };
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
      signOut(session ? 'sessionEnded' : 'tokenWrong');
      return false;
    }
    if (r.res.status === 403 && errorCode(r) === 'forbidden_role') return true; // the caller says it
    if (r.res.status === 403 && errorCode(r) === 'csrf_required') {
      // The session's CSRF value is not the one this page holds (a
      // sign-in in another tab made a new session): the page starts over.
      signOut('csrfRefused');
      return false;
    }
    if (r.res.status === 403) {
      signOut('adminDisabled');
      return false;
    }
    return true;
  }

  function errorText(r) {
    if (errorCode(r) === 'forbidden_role') return forbiddenText(r);
    return r.data.error?.message || String(r.res.status);
  }

  // errorCode is an answer's error code ({"error": {"code": …}}, or
  // {"error": "…"}).
  function errorCode(r) {
    const e = r.data?.error;
    return typeof e === 'string' ? e : e?.code;
  }

  // forbiddenText says a 403 forbidden_role in the page's words: the
  // setting above the person's role, and the role it needs.
  function forbiddenText(r) {
    const e = typeof r.data.error === 'object' ? r.data.error : r.data;
    // The answer's role is the one needed; the held one is the session's
    // (a token's the page does not know).
    const role = roleName(session?.role);
    if (!e.field) return t('forbiddenRoleAny', { role });
    const s = settings.find((x) => x.name === e.field);
    return t('forbiddenRole', { role, field: s ? settingLabel(s) : e.field, need: roleName(e.role || s?.role || 'admin') });
  }

  const roleName = (r) => ({ viewer: t('roleViewer'), operator: t('roleOperator'), admin: t('roleAdmin') })[r] || '?';

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

  function say(el, text, isError) {
    el.textContent = text;
    el.classList.toggle('is-error', !!isError);
  }

  function signOut(reasonKey) {
    clearTimeout(timer);
    clearTimeout(productsTimer);
    setToken('');
    session = null;
    $('who').hidden = true;
    if ($('queue-dialog').open) $('queue-dialog').close();
    for (const c of cards.values()) c.el.remove();
    cards.clear();
    for (const row of rows.values()) row.el.remove();
    rows.clear();
    $('dash').hidden = true;
    $('sign-out-error').hidden = true;
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
    if (session) {
      $('who').textContent = t('signedInAs', { who: session.email || session.subject, role: roleName(session.role) });
      $('who').hidden = false;
    }
    try {
      const r = await api('GET', '/queue-settings');
      if (r.res.ok) settings = r.data.settings || [];
    } catch { /* the forms come without settings: new queues get the defaults */ }
    buildNewQueueForm();
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
      for (const [series, v] of [[c.samples, q.length], [c.rates, q.effectiveRatePerSecond]]) {
        series.push({ t: now, v });
        while (series.length && series[0].t < now - WINDOW_MS) series.shift();
      }
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
    const chart = (fig) => ({
      svg: fig.querySelector('svg'), grid: fig.querySelector('.chart-grid'), line: fig.querySelector('.chart-line'),
      area: fig.querySelector('.chart-area'), start: fig.querySelector('.chart-x-start'),
    });
    const c = {
      name, el, field, samples: [], rates: [], paused: false, rateDirty: false,
      badge: q('.badge-state'), soldOutBadge: q('.badge-soldout'), pause: q('.pause-button'),
      rateForm: q('.rate-form'), rateInput: q('.rate-input'), message: q('.qmessage'),
      unitsInput: q('.units-input'),
      lengthChart: chart(q('.chart:not(.chart-rate)')), rateChart: chart(q('.chart-rate')),
    };
    el.dataset.queue = name;
    q('.qname').textContent = name;
    c.pause.addEventListener('click', () => change(c, { paused: !c.paused }));
    c.rateInput.addEventListener('input', () => { c.rateDirty = true; });
    buildSettingsForm(c);
    buildSuspects(c, q);
    q('.soldout-button').addEventListener('click', () => setStock(c, 'sold-out', undefined, 'markedSoldOut'));
    const reportHelp = q('.report-help');
    reportHelp.id = 'report-help-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
    q('.report-button').setAttribute('aria-describedby', reportHelp.id);
    q('.report-button').addEventListener('click', () => saveReport(c));
    const help = q('.units-help');
    help.id = 'units-help-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
    c.unitsInput.setAttribute('aria-describedby', help.id);
    q('.stock-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const raw = c.unitsInput.value.trim();
      const units = Number(raw);
      if (c.unitsInput.validity.badInput || raw !== '' && !(Number.isInteger(units) && units >= 0)) {
        note(c, t('restockUnitsInvalid'), true);
        c.unitsInput.focus();
        return;
      }
      // No units: the server counts them from the products, or forgets them.
      setStock(c, 'restock', raw === '' ? undefined : { unitsLeft: units }, 'restockedQueue')
        .then((ok) => { if (ok) c.unitsInput.value = ''; });
    });
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

  // setStock marks the queue sold out or restocks it (action: the admin
  // API's verb) and shows the answer, the queue's stats, at once.
  async function setStock(c, action, body, savedKey) {
    const q = await send(c.message, 'POST', '/queues/' + encodeURIComponent(c.name) + '/' + action, body);
    if (!q) return false;
    render(c, q, Date.now());
    note(c, t(savedKey));
    return true;
  }

  // saveReport fetches the sale's report and saves it as a file. Not a
  // link: a link cannot carry the admin token; and not opened in a tab from
  // the fetched copy: a page made from this one would inherit its
  // Content-Security-Policy, which forbids the report's own style.
  async function saveReport(c) {
    note(c, '');
    const ask = (tz) => fetch(base + '/admin/v1/queues/' + encodeURIComponent(c.name) + '/report?' + new URLSearchParams({ lang, tz }), {
      headers: authHeaders('GET'), cache: 'no-store',
    });
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
    let res;
    try {
      res = await ask(tz);
      // A zone the server's time zone database lacks: in UTC, then.
      if (res.status === 400 && tz !== 'UTC') res = await ask('UTC');
    } catch (err) {
      note(c, err.message, true);
      return;
    }
    if (!res.ok) {
      const r = { res, data: await res.json().catch(() => ({})) };
      if (answered(r)) note(c, errorText(r), true);
      return;
    }
    const a = document.createElement('a');
    a.href = URL.createObjectURL(await res.blob());
    a.download = 'waitroom-report-' + c.name + '.html';
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
    note(c, t('reportSaved', { file: a.download }));
  }

  function note(c, text, isError) {
    say(c.message, text, isError);
  }

  function render(c, q, now) {
    c.stats = q;
    c.paused = q.paused;
    c.badge.textContent = q.paused ? t('badgePaused') : t('badgeRunning');
    c.badge.classList.toggle('is-paused', q.paused);
    c.pause.textContent = q.paused ? t('resume') : t('pause');
    c.pause.classList.toggle('is-paused', q.paused);
    c.soldOutBadge.hidden = !q.soldOut;
    c.field('units').textContent = q.unitsLeft === null || q.unitsLeft === undefined
      ? t('unitsLeftUnknown') : t('unitsLeft', { n: numbers.format(q.unitsLeft) });

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
    // The operator's message, as text: whatever it holds is never markup here.
    const said = messageFor(q.message, lang);
    c.field('message').hidden = said === '';
    c.field('message').textContent = said ? t('messageNow', { text: said }) : '';
    const opening = c.field('opening');
    opening.hidden = !q.opensAt || q.preQueueLength === 0 && Date.parse(q.opensAt) < now;
    opening.textContent = q.opensAt ? t('opensAtNote', {
      time: new Date(q.opensAt).toLocaleString(lang), n: numbers.format(q.preQueueLength),
    }) : '';

    const phase = c.field('phase');
    phase.hidden = !q.phaseInForce;
    phase.textContent = q.phaseInForce ? t('phaseNow', { name: q.phaseInForce, rate: rates.format(q.effectiveRatePerSecond) }) : '';
    showSchedule(c, q, now);
    showShadow(c, q);
    showLanes(c, q);

    if (!c.rateDirty && document.activeElement !== c.rateInput) c.rateInput.value = String(q.ratePerSecond);
    fillSettingsForm(c, q);
    drawLength(c, now);
    drawRate(c, now);
  }

  // showSchedule draws the queue's timeline (GET …/schedule) while it has
  // phases: asked again when they change, when a step ends and every
  // minute, not on every refresh.
  async function showSchedule(c, q, now) {
    const box = c.field('timeline');
    const phases = JSON.stringify(q.phases || []);
    if (phases === '[]') {
      box.hidden = true;
      c.schedule = null;
      return;
    }
    if (c.schedule && c.schedule.phases === phases && now < c.schedule.until) return;
    c.schedule = { phases, until: now + 60_000 };
    let r;
    try {
      r = await api('GET', '/queues/' + encodeURIComponent(c.name) + '/schedule');
    } catch {
      c.schedule = null;
      return;
    }
    if (!r.res.ok) {
      c.schedule = null;
      return;
    }
    const steps = r.data.steps || [];
    const ends = steps.map((st) => st.until && Date.parse(st.until)).filter(Boolean);
    if (ends.length) c.schedule.until = Math.min(c.schedule.until, ...ends);
    drawSchedule(box, steps, Date.parse(r.data.now));
    box.hidden = false;
  }

  // drawSchedule lists the steps as a bar of stretches, each as wide as it
  // lasts (the last, without an end, as wide as the longest), the one in
  // force marked; each says its phase, when, the method, the rate and who
  // may join.
  function drawSchedule(box, steps, now) {
    const span = (st) => (st.until ? Date.parse(st.until) - Date.parse(st.from) : 0);
    const longest = Math.max(60_000, ...steps.map(span));
    const when = (iso) => new Date(iso).toLocaleString(lang, { dateStyle: 'short', timeStyle: 'short' });
    const items = steps.map((st) => {
      const li = document.createElement('li');
      li.className = 'timeline-step' + (st.phase ? '' : ' timeline-own');
      li.style.flexGrow = String(Math.max(1, Math.round((span(st) || longest) / 60_000)));
      const inForce = Date.parse(st.from) <= now && (!st.until || now < Date.parse(st.until));
      if (inForce) li.setAttribute('aria-current', 'step');
      const name = document.createElement('strong');
      name.textContent = st.phase || t('timelineOwn');
      const detail = document.createElement('span');
      detail.textContent = t(st.until ? 'timelineSpan' : 'timelineFrom', { from: when(st.from), until: st.until ? when(st.until) : '' }) + ' · ' +
        choiceLabel(settingNamed('queueingMethod'), st.queueingMethod) + ' · ' +
        t('timelineRate', { n: rates.format(st.ratePerSecond) }) + ' · ' + choiceLabel(settingNamed('entry'), st.entry);
      li.append(name, detail);
      return li;
    });
    box.querySelector('.timeline-steps').replaceChildren(...items);
  }

  // ------------------------------------------------------------ lanes

  const percents = new Intl.NumberFormat(lang, { style: 'percent', maximumFractionDigits: 1 });

  // showLanes lists each lane's figures from the stats (laneStats): who
  // waits in it, what it was let in against its share, and its codes
  // redeemed and left ("–" for a lane that takes none). Hidden for a
  // queue without lanes.
  function showLanes(c, q) {
    const box = c.field('lanes');
    const list = q.laneStats || [];
    box.hidden = list.length === 0;
    if (!list.length) return;
    const takesCodes = new Set((q.lanes || []).filter((l) => l.codes).map((l) => l.name));
    const admitted = list.reduce((sum, l) => sum + (l.admitted || 0), 0);
    const rowsShown = list.map((l) => {
      const tr = document.createElement('tr');
      const name = document.createElement('th');
      name.scope = 'row';
      name.textContent = l.name;
      const cells = [
        percents.format(l.share || 0),
        numbers.format(l.length || 0),
        t('laneAdmitted', { n: numbers.format(l.admitted || 0), pct: percents.format(admitted > 0 ? (l.admitted || 0) / admitted : 0) }),
        takesCodes.has(l.name) || l.redeemed > 0 ? numbers.format(l.redeemed || 0) : '–',
        takesCodes.has(l.name) || l.codesLeft > 0 ? numbers.format(l.codesLeft || 0) : '–',
      ].map((text) => {
        const td = document.createElement('td');
        td.className = 'num';
        td.textContent = text;
        return td;
      });
      tr.append(name, ...cells);
      return tr;
    });
    box.querySelector('.lane-rows').replaceChildren(...rowsShown);
  }

  // ------------------------------------------------------------ suspects

  // The signals' names for people (package suspect's names); one the page
  // does not know shows as the server names it.
  const signalKeys = {
    edge_score: 'signalEdgeScore', address_range: 'signalAddressRange',
    human_check: 'signalHumanCheck', poll_rate: 'signalPollRate',
  };

  // buildSuspects wires the card's shadow line: its suspects are read
  // (GET …/suspects) when the section opens, and again while it is open
  // whenever a refresh finds the shadow line changed.
  function buildSuspects(c, q) {
    c.suspects = {
      box: q('.suspects'), table: q('.suspect-table'), tbody: q('.suspect-rows'),
      none: q('.suspects-none'), more: q('.suspects-more'), rows: new Map(), seen: '',
    };
    c.suspects.box.addEventListener('toggle', () => { if (c.suspects.box.open) loadSuspects(c); });
  }

  // showShadow shows the shadow line's numbers from the queue's stats.
  function showShadow(c, q) {
    c.field('shadow').textContent = t('shadowSummary', {
      n: numbers.format(q.shadowLength ?? 0), cleared: numbers.format(q.clearedTotal ?? 0),
    });
    const seen = [q.shadowLength, q.shadowEnteredTotal, q.clearedTotal].join('/');
    if (seen === c.suspects.seen) return;
    c.suspects.seen = seen;
    if (c.suspects.box.open) loadSuspects(c);
  }

  async function loadSuspects(c) {
    let r;
    try {
      r = await api('GET', '/queues/' + encodeURIComponent(c.name) + '/suspects');
    } catch (err) {
      note(c, err.message, true);
      return;
    }
    if (!answered(r)) return;
    if (!r.res.ok) {
      note(c, errorText(r), true);
      return;
    }
    const s = c.suspects;
    const list = r.data.suspects || [];
    showAll(s.rows, s.tbody, list, (p) => p.id, (id) => newSuspectRow(c, id), fillSuspectRow);
    s.table.hidden = list.length === 0;
    s.none.hidden = list.length > 0;
    s.more.hidden = r.data.shadowLength <= list.length;
    s.more.textContent = t('suspectsMore', { n: numbers.format(list.length), total: numbers.format(r.data.shadowLength) });
  }

  function newSuspectRow(c, id) {
    const row = fromTemplate('suspect-row-template');
    const button = row.q('.clear-button');
    button.setAttribute('aria-label', t('clearSuspectNamed', { id }));
    button.addEventListener('click', () => clearSuspect(c, id, button));
    return row;
  }

  function fillSuspectRow(row, p) {
    row.field('id').textContent = p.id;
    row.field('joined').textContent = new Date(p.joinedAt).toLocaleString(lang, { dateStyle: 'short', timeStyle: 'medium' });
    row.field('signals').textContent = (p.signals || []).map((s) => (signalKeys[s] ? t(signalKeys[s]) : s)).join(', ');
    row.field('address').textContent = p.address;
  }

  // clearSuspect moves one suspect's place into the real line, where a
  // person arriving when it did would stand (POST …/suspects/{id}/clear).
  async function clearSuspect(c, id, button) {
    button.disabled = true;
    const done = await send(c.message, 'POST', '/queues/' + encodeURIComponent(c.name) + '/suspects/' + encodeURIComponent(id) + '/clear');
    button.disabled = false;
    if (!done) {
      loadSuspects(c); // gone already (404): the list shows what is left
      return;
    }
    note(c, t('suspectCleared', { id }));
    c.field('shadow').textContent = t('shadowSummary', { n: numbers.format(done.shadowLength), cleared: numbers.format(done.clearedTotal) });
    loadSuspects(c);
  }

  // ------------------------------------------------------------ settings forms

  // Both forms with settings — each card's, and the new queue's — are built,
  // filled and read by the functions here, from the server's declaration.

  const cap = (name) => name.charAt(0).toUpperCase() + name.slice(1);
  const settingNamed = (name) => settings.find((s) => s.name === name) || { name, choices: [] };
  // choiceLabel names one of a choice setting's values for people.
  const choiceLabel = (s, v) => M['setting' + cap(s.name) + cap(v)] ?? s.choiceLabels?.[s.choices.indexOf(v)] ?? v;
  // A setting's name and choices come from the server, in English;
  // another language translates them in its messages (setting<Name>,
  // setting<Name><Choice>). What it does is in every language's messages,
  // English too (settingHelp<Name>; the server serves the English one).
  const settingLabel = (s) => M['setting' + cap(s.name)] ?? s.label ?? s.name;

  // messageFor is the text of a message (a string, or texts by language)
  // a reader of code sees, as the server picks it: their language's, else
  // English, else the first.
  function messageFor(m, code) {
    if (typeof m === 'string' || !m) return m || '';
    const keys = Object.keys(m).sort();
    const base = code.split('-')[0];
    return m[code] ?? m[keys.find((k) => k.split('-')[0] === base)] ?? m.en ?? m[keys[0]] ?? '';
  }

  // messageFields builds a message's fields: one text for every language,
  // a text per page language (in a <details>), and a preview that shows
  // the text as the waiting page does — as text.
  function messageFields(wrap, s, id, onInput) {
    const all = document.createElement('textarea');
    all.id = id;
    all.name = s.name;
    all.rows = 3;
    all.maxLength = 500;
    all.dir = 'auto';
    const byLang = document.createElement('details');
    byLang.className = 'message-languages';
    const summary = document.createElement('summary');
    summary.textContent = t('messageByLanguage');
    byLang.append(summary);
    for (const l of pageLanguages) {
      const f = document.createElement('div');
      f.className = 'field';
      const label = document.createElement('label');
      label.htmlFor = id + '-' + l.code;
      label.textContent = l.name;
      label.lang = l.code;
      const area = document.createElement('textarea');
      area.id = id + '-' + l.code;
      area.name = s.name + '.' + l.code;
      area.dataset.messageLang = l.code;
      area.lang = l.code;
      area.dir = 'auto';
      area.rows = 2;
      area.maxLength = 500;
      f.append(label, area);
      byLang.append(f);
    }
    const preview = document.createElement('div');
    preview.className = 'message-preview';
    const previewLabel = document.createElement('p');
    previewLabel.className = 'message-preview-label';
    previewLabel.id = id + '-preview-label';
    previewLabel.textContent = t('messagePreview');
    const previewText = document.createElement('p');
    previewText.className = 'operator-message-text';
    previewText.dir = 'auto';
    previewText.setAttribute('aria-labelledby', previewLabel.id);
    preview.append(previewLabel, previewText);
    const show = () => {
      const said = messageFor(readMessage(wrap.closest('form'), s), lang);
      previewText.textContent = said;
      preview.hidden = said === '';
    };
    wrap.addEventListener('input', show);
    if (onInput) wrap.addEventListener('input', onInput);
    wrap.showPreview = show;
    return { input: all, extra: [byLang, preview] };
  }

  // readMessage is the message a form's fields hold, as the admin API takes
  // it: the texts by language when any is written (the text for every
  // language standing for English where English has none), else the one
  // text ("" for none).
  function readMessage(form, s) {
    const all = form.elements.namedItem(s.name).value;
    const texts = {};
    for (const area of form.querySelectorAll('[data-message-lang]')) {
      if (area.value !== '') texts[area.dataset.messageLang] = area.value;
    }
    if (!Object.keys(texts).length) return all;
    if (all !== '' && !('en' in texts)) texts.en = all;
    return Object.fromEntries(Object.entries(texts).sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  // sameSetting compares two values read from a form (a message may be an
  // object).
  const sameSetting = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  // addSettingFields adds to box one labelled field per setting an admin
  // may set, its inputs named after the settings; ids start with idPrefix.
  function addSettingFields(box, idPrefix, onInput) {
    for (const s of settings) {
      if (s.readOnly) continue;
      const id = idPrefix + s.name;
      const wrap = document.createElement('div');
      wrap.className = 'field setting' + (s.kind === 'boolean' ? ' setting-check' : '');
      wrap.dataset.setting = s.name;
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = settingLabel(s);
      if (s.kind === 'text-by-language') {
        wrap.className += ' setting-message';
        const { input, extra } = messageFields(wrap, s, id, onInput);
        const help = document.createElement('p');
        help.className = 'setting-help';
        help.id = id + '-help';
        help.textContent = M['settingHelp' + cap(s.name)] ?? s.help;
        input.setAttribute('aria-describedby', help.id);
        wrap.append(label, input, help, ...extra);
        box.append(wrap);
        continue;
      }
      const input = document.createElement(s.kind === 'choice' ? 'select' : isList(s) ? 'textarea' : 'input');
      input.id = id;
      input.name = s.name;
      if (isList(s)) { // a list of phases or lanes, as the admin JSON gives it
        wrap.className += ' setting-phases';
        input.rows = 6;
        input.spellcheck = false;
        input.placeholder = listPlaceholders[s.kind];
      } else if (s.kind === 'choice') {
        for (const v of s.choices || []) {
          const opt = document.createElement('option');
          opt.value = v;
          opt.textContent = choiceLabel(s, v);
          input.append(opt);
        }
      } else if (s.kind === 'boolean') {
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
      if (onInput) input.addEventListener('input', onInput);
      aboveRole(input, s);
      if (s.kind === 'boolean') wrap.append(input, label, help);
      else wrap.append(label, input, help);
      box.append(wrap);
    }
  }

  // aboveRole disables a setting's input the signed-in person's role may
  // not change (the server's declaration: each setting's role), saying
  // which role it needs; the server refuses such a change anyway.
  function aboveRole(input, s) {
    if (!session || !s.role || allows(session.role, s.role)) return;
    input.disabled = true;
    input.title = t('fieldAboveRole', { role: roleName(s.role) });
  }

  // isList says whether a setting is a list edited as its JSON: the
  // sale's phases, the queue's lanes.
  const isList = (s) => s.kind === 'phases' || s.kind === 'lanes';
  const listPlaceholders = {
    phases: '[{"name": "members", "startsAt": "…", "ratePerSecond": 50}]',
    lanes: '[{"name": "members", "claim": "tier=gold", "codes": true, "share": 0.3}, {"name": "public", "share": 0.7}]',
  };

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

  // readSetting is the value a setting's input holds, as the admin API
  // takes it, or null when it holds none that could be.
  function readSetting(s, input) {
    if (s.kind === 'text-by-language') return readMessage(input.form, s);
    if (isList(s)) {
      try {
        const list = JSON.parse(input.value.trim() || '[]');
        return Array.isArray(list) ? list : null;
      } catch {
        return null;
      }
    }
    if (s.kind === 'boolean') return input.checked;
    if (s.kind === 'date-time') return fromLocalInput(input.value);
    if (s.kind === 'choice') return input.value || null;
    const v = input.value.trim() === '' ? NaN : Number(input.value);
    return Number.isFinite(v) ? v : null;
  }

  // showSettings puts values (a queue's, or the defaults) in form's
  // inputs and returns what they now hold, read back as readSetting reads
  // them: changedSettings compares with it, so that Save sends only what
  // the operator changed and leaves alone what others change meanwhile
  // (a pause from another tab, say).
  function showSettings(form, values) {
    const shown = {};
    for (const s of settings) {
      const input = form.elements.namedItem(s.name);
      if (!input) continue;
      const v = values[s.name];
      if (s.kind === 'text-by-language') {
        const byLang = v && typeof v === 'object' ? v : {};
        input.value = typeof v === 'string' ? v : '';
        for (const area of form.querySelectorAll('[data-message-lang]')) area.value = byLang[area.dataset.messageLang] ?? '';
        input.closest('.setting').showPreview();
      } else if (isList(s)) input.value = v && v.length ? JSON.stringify(v, null, 2) : '';
      else if (s.kind === 'boolean') input.checked = !!v;
      else if (s.kind === 'date-time') input.value = localInput(v);
      else input.value = v === undefined || v === null ? '' : String(v);
      shown[s.name] = readSetting(s, input);
    }
    return shown;
  }

  // changedSettings is { patch } of the settings whose inputs differ from
  // shown, or { invalid } naming the first changed one that holds no value.
  function changedSettings(form, shown) {
    const patch = {};
    for (const s of settings) {
      const input = form.elements.namedItem(s.name);
      if (!input) continue;
      const v = readSetting(s, input);
      if (sameSetting(v, shown[s.name])) continue;
      if (v === null) return { invalid: s, input };
      patch[s.name] = v;
    }
    // A rate set here is a start for the adaptive rate, not an override,
    // when the adaptive box stays ticked (a rate alone switches it off).
    if ('ratePerSecond' in patch && form.elements.namedItem('adaptive')?.checked) patch.adaptive = true;
    return { patch };
  }

  // buildSettingsForm makes a card's form: one field per setting.
  function buildSettingsForm(c) {
    const form = c.el.querySelector('.settings-form');
    c.settingsForm = form;
    c.settingsDirty = false;
    c.shown = {};
    addSettingFields(form.querySelector('.settings-fields'),
      'set-' + c.name.replace(/[^A-Za-z0-9_-]/g, '_') + '-', () => { c.settingsDirty = true; });
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      saveSettings(c);
    });
  }

  // fillSettingsForm shows the queue's settings, unless someone is editing.
  function fillSettingsForm(c, q) {
    if (c.settingsDirty || c.settingsForm.contains(document.activeElement)) return;
    c.shown = showSettings(c.settingsForm, q);
  }

  // saveSettings PATCHes the fields the operator changed.
  async function saveSettings(c) {
    const { patch, invalid, input } = changedSettings(c.settingsForm, c.shown);
    if (invalid) {
      note(c, t('settingInvalid', { name: settingLabel(invalid) }), true);
      input.focus();
      return;
    }
    if (!Object.keys(patch).length) {
      note(c, t('settingsUnchanged'));
      return;
    }
    if (await change(c, patch)) {
      c.settingsDirty = false;
      c.shown = showSettings(c.settingsForm, c.stats);
    }
  }

  // ------------------------------------------------------------ new queue

  // newQueueShown is what the new-queue form showed when it opened: the
  // server's defaults, which a queue gets for every setting not sent.
  let newQueueShown = {};

  function buildNewQueueForm() {
    const box = $('queue-settings');
    box.replaceChildren();
    addSettingFields(box, 'new-setting-');
  }

  function openNewQueue() {
    $('queue-form').reset();
    say($('queue-message'), '');
    newQueueShown = showSettings($('queue-form'), Object.fromEntries(settings.map((s) => [s.name, s.default])));
    $('queue-dialog').showModal();
  }

  async function createQueue(e) {
    e.preventDefault();
    const msg = $('queue-message');
    const name = $('queue-name').value.trim();
    // PUT replaces a queue's whole config: never by accident from here.
    if (cards.has(name)) {
      say(msg, t('queueExists', { name }), true);
      return;
    }
    const { patch, invalid, input } = changedSettings($('queue-form'), newQueueShown);
    if (invalid) {
      say(msg, t('settingInvalid', { name: settingLabel(invalid) }), true);
      input.focus();
      return;
    }
    if (!await send(msg, 'PUT', '/queues/' + encodeURIComponent(name), patch)) return;
    $('queue-dialog').close();
    refresh();
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

  $('tabs').hidden = !sells;
  $('new-queue').addEventListener('click', openNewQueue);
  $('queue-form').addEventListener('submit', createQueue);
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
  $('sign-out').addEventListener('click', leave);

  // leave signs out: a session ends in the server's store, not only here.
  // Until the server says it ended (or that there was none: 401), the
  // session still works, so the page stays signed in and says so.
  async function leave() {
    if (session) {
      const banner = $('sign-out-error');
      banner.hidden = true;
      let why;
      try {
        const res = await fetch(base + '/admin/sso/logout', { method: 'POST', headers: authHeaders('POST'), cache: 'no-store' });
        const data = await res.json().catch(() => ({}));
        if (!res.ok && res.status !== 401) why = errorCode({ data }) === 'csrf_required' ? t('csrfStale') : data.error?.message || String(res.status);
      } catch (err) {
        why = err.message;
      }
      if (why) {
        banner.textContent = t('signOutFailed', { msg: why });
        banner.hidden = false;
        return;
      }
    }
    signOut('');
  }

  // start: a sign-in that came back refused says why (?sso=, once); a
  // session signed in acts; else a token kept in this tab does.
  async function start() {
    const params = new URLSearchParams(location.search);
    const sso = params.get('sso');
    if (sso) {
      params.delete('sso');
      history.replaceState(null, '', location.pathname + (params.size ? '?' + params : '') + location.hash);
    }
    const refused = sso ? 'sso' + cap(sso) : '';
    if (!getToken() && $('sso-form')) {
      try {
        const res = await fetch(base + '/admin/sso/session', { cache: 'no-store', headers: { Accept: 'application/json' } });
        if (res.ok) session = await res.json();
      } catch { /* not signed in */ }
    }
    if (session || getToken()) signIn();
    else signOut(refused in M ? refused : '');
  }

  start();
})();
