// The waiting-room page. It enters the line (POST, idempotent: a refresh
// keeps the place), shows where the visitor stands, asks again exactly when
// the server's pollAfterSeconds says and never sooner, says when the sale
// has sold out (and carries on if it is restocked), and once admitted
// turns into the order form that spends the entry token.
//
// Far from the front it asks no one about itself: it reads the line's front
// document (GET …/front, the same for everyone, which a CDN answers) and
// works out its place from the signed ticket its last answer carried, by
// the server's own formulas; it asks its instance (entries/me) only where
// the document says admission may reach it soon (askWithin), where no-shows
// are judged (presence), or where the document places no one by its ticket
// (a draw, an opening, admitted, left, another epoch).
//
// In a queue with lanes, the answer names the visitor's lane: the place
// and the line's length are within it. A place in a lane other than public
// asks its instance every time: the front document is the public lane's,
// and the answer carries no signed ticket to read it by. An access code
// (the code form) goes in the enter request's JSON body, never in a URL.
//
// Identity is the anonymous wr_session cookie the server set with this page
// (or the shop's own login cookie); fetch sends it because the API is on the
// same origin.

// The page's arithmetic, outside its closure so that node runs it alone:
// the place it works out from the front document and the wait it tells
// there, twins of the server's queue.Position (through queue/front's
// Document.Place) and of its estimate model (internal/queue/estimate's Of,
// on the document's pace.estimate). The cases of
// internal/queue/storetest/testdata/places.json hold the places equal, and
// internal/queue/estimate/testdata/ranges.json the model (internal/httpapi's
// TestThePagePlacesAsTheServerDoes and TestThePageRangesAsTheServerDoes run
// them here).
const waitroomArithmetic = (() => {
  'use strict';

  // placeFromFront is queue/front's Document.Place (queue.Position): the
  // ticket's distance from the head less the leavers below it (read back
  // from their gaps), plus the places an operator cleared from the shadow
  // line ahead of it (cleared: the ticket each stands just behind), and the
  // lowest place it may really have when leavers lie beyond the list.
  // null: the document places no one by this ticket. A ticket of another
  // epoch goes to the instance: the line was lost and begun again (its
  // numbers count another line). A suspect's ticket is placed as any: it
  // names the real line and the ticket a person arriving with it would
  // hold, so this arithmetic gives the place it is shown; where that ticket
  // no longer waits, null sends it to the instance, which answers it from
  // its shadow standing, as it answers anyone the document cannot place.
  function placeFromFront(d, tk) {
    if (!tk || tk.epoch !== d.epoch || d.head === 0 || tk.n < d.head || tk.n > d.last || d.drawn || d.placing || d.opensAt) return null;
    let at = d.head, below = 0;
    for (const gap of d.left.deltas) {
      at += gap;
      if (at === tk.n) return null; // left the line
      if (at > tk.n) break;
      below++;
    }
    let ahead = 0; // cleared places ahead (none in an older server's document)
    for (const c of d.cleared || []) {
      if (c >= tk.n) break;
      ahead++;
    }
    const position = tk.n - d.head + 1 - below + ahead;
    const lowest = d.left.unlisted > 0 && below === d.left.deltas.length ? Math.max(1, position - d.left.unlisted) : position;
    return { position, lowest };
  }

  // of is the server's model of a wait (internal/queue/estimate's Of),
  // line for line: the median and the 5th to 95th percentile range of the
  // wait at position (1-based) in a line of length, under p ({rate, claim,
  // spread, tick, interval, drawn, steps: [{after, rate}]}). Only + - * /,
  // Math.sqrt, Math.floor and Math.ceil, in Go's order, so that both
  // compute the same doubles to the last bit (estimate/testdata/ranges.json
  // holds them equal; Go rounds each product before adding it, as
  // JavaScript always does). known false: the front never reaches the
  // place (reason paused).
  function of(position, length, p) {
    const steps = p.steps || [];
    if (p.rate <= 0 && steps.length === 0) return { seconds: 0, low: 0, high: 0, known: false, reason: 'paused' };
    const within = p.drawn ? length : position;
    if (within <= p.tick) return { seconds: 0, low: 0, high: Math.ceil(p.interval), known: true };
    let mid = position, low = position, high = position;
    if (p.drawn) {
      mid = (length + 1) / 2;
      low = 0.05 * length;
      high = 0.95 * length;
    }
    let claim = p.claim;
    if (!(claim > 0 && claim <= 1)) claim = 1;
    const sigma = Math.sqrt(p.spread * p.spread + (1 - claim) / (claim * mid));
    const f = 1 + 1.645 * sigma;
    // A draw's 95th percentile may never be reached where its median is
    // (nobody let in from some step on): a range without an end.
    const t = passing(p, steps, mid, claim), tHigh = passing(p, steps, high, claim);
    if (t === Infinity || tHigh === Infinity) return { seconds: 0, low: 0, high: 0, known: false, reason: 'paused' };
    const seconds = Math.ceil(t);
    const lo = Math.max(0, Math.floor(passing(p, steps, low, claim) / f - p.interval));
    const hi = Math.ceil(tHigh * f + p.interval);
    return { seconds, low: Math.min(lo, seconds), high: Math.max(hi, seconds), known: true };
  }

  // passing is estimate's Params.passing: the seconds the front takes to
  // move n places, at rate / claim places a second until the first step,
  // then at each step's; Infinity when it never does.
  function passing(p, steps, n, claim) {
    let at = 0, rate = p.rate;
    for (const s of steps) {
      if (s.after > at && rate > 0) {
        const moves = (s.after - at) * rate / claim;
        if (n <= moves) return at + n * claim / rate;
        n -= moves;
      }
      at = Math.max(at, s.after);
      rate = s.rate;
    }
    if (rate <= 0) return Infinity;
    return at + n * claim / rate;
  }

  // range is the wait the server tells at a first-come position, worked
  // out from the front document's pace: of() on its estimate model
  // (pace.estimate, the public lane's; nextTickAdmits is the tick), so
  // {seconds, low, high, known}. The page says whether the wait is known
  // from the document itself (paused, stalled, the stock): known false
  // here only says nobody is let in. A document without the model (an
  // older server's, from a cache) gives the estimate as that server told
  // it, ceil(position / estimateRatePerSecond), 0 within nextTickAdmits
  // (none without it), and no range (low and high null).
  function range(position, pace) {
    const m = pace.estimate;
    if (!m) {
      let seconds = 0;
      if (pace.estimateRatePerSecond > 0 && !(position <= pace.nextTickAdmits)) seconds = Math.ceil(position / pace.estimateRatePerSecond);
      return { seconds, low: null, high: null, known: true };
    }
    const steps = (m.steps || []).map((s) => ({ after: s.afterSeconds, rate: s.ratePerSecond }));
    return of(position, position, {
      rate: m.admitRatePerSecond, claim: m.claim, spread: m.spread, tick: pace.nextTickAdmits, interval: m.intervalSeconds, drawn: false, steps,
    });
  }

  // estimate is the median alone (estimatedWaitSeconds): the poll bands
  // 10/5/2 follow it, ±20%.
  function estimate(position, pace) {
    return range(position, pace).seconds;
  }

  return { placeFromFront, estimate, range, of };
})();

(() => {
  'use strict';
  if (typeof document === 'undefined') return; // node, running the arithmetic alone (above)
  const { placeFromFront, estimate, range } = waitroomArithmetic;

  const $ = (id) => document.getElementById(id);
  const M = JSON.parse($('waitroom-texts').textContent);
  // The page's language (the server chose it and the template wrote it on
  // <html>): numbers and plural forms follow it.
  const lang = document.documentElement.lang || 'en';
  const numbers = new Intl.NumberFormat(lang);
  const twoDigits = new Intl.NumberFormat(lang, { minimumIntegerDigits: 2, useGrouping: false });
  const plurals = new Intl.PluralRules(lang);

  // The status block says where the API lives ("" for waitroom serve, the
  // prefix in gateway mode), which line this is, and what admission leads
  // to: the order form ("shop") or back to the page the shopper was sent
  // from ("gateway").
  const root = $('waitroom');
  const base = root.dataset.base || '';
  const gateway = root.dataset.mode === 'gateway';
  const queue = root.dataset.queue || 'default';
  const params = new URLSearchParams(location.search);
  const entriesURL = base + '/api/v1/queues/' + encodeURIComponent(queue) + '/entries';
  const frontURL = base + '/api/v1/queues/' + encodeURIComponent(queue) + '/front';
  const drawURL = base + '/api/v1/queues/' + encodeURIComponent(queue) + '/draw';
  // The page's own title (the template's, the shop's name in it): what
  // the line adds goes before it.
  const pageTitle = document.title;
  const HOLD_SECONDS = 20;
  // Within this estimate of the front the page asks its instance, without
  // first reading the front document (whose askWithin covers the same
  // seconds of admission: queue/front's AskAhead).
  const ASK_AHEAD_SECONDS = 5;

  // Remembered per tab and per line: the first position seen (the start of
  // the progress bar, so a refresh does not reset it) and a finished order.
  const saved = {
    key: (name) => 'waitroom:' + queue + ':' + name,
    get(name) {
      try { return JSON.parse(sessionStorage.getItem(this.key(name))); } catch { return null; }
    },
    set(name, v) {
      try { sessionStorage.setItem(this.key(name), JSON.stringify(v)); } catch { /* private mode */ }
    },
    drop(name) {
      try { sessionStorage.removeItem(this.key(name)); } catch { /* private mode */ }
    },
  };

  // Every request the page sent to the line, in order: when it went out (ms
  // on the page clock), what came back and the pollAfterSeconds it carried.
  // The browser tests read it; it is also handy in the console.
  const polls = [];
  window.__polls = polls;

  let state = '';
  let timer = 0;          // the one pending request to the line
  let dueAt = 0;          // when that request goes out (Date.now() clock)
  let dueKind = '';       // what the countdown shows: 'poll' | 'retry' | 'trouble'
  let lastPosition = 0;
  let nearFront = false;  // the last answer was near enough the front for the server to hold our poll
  let beyondStock = false; // the last answer said fewer units are left than people ahead
  let held = false;       // a status request the server may hold is in flight
  let ready = null;       // {token, expiresAt (ms, local clock)}
  let ticket = null;      // {signed, epoch, n}: the place-holder the last answer carried
  let front = null;       // the last front document read
  let lastAsked = 0;      // when the page last asked its instance (Date.now() clock)
  let opensAt = 0;        // before the line's opening: when it opens (ms, local clock)
  let ordering = false;
  let lane = '';          // the visitor's lane, as the last answer named it ('': a queue without lanes)
  let pendingCode = '';   // an access code to send with the next enter (POST) until the line has judged it
  let sent = 0;           // requests to the line sent: an answer to one that is not the last is stale
  let due = null;         // {fn, kind, at}: the pending request, as schedule set it
  let cutShort = null;    // the pending request a code was sent before (due then), resumed if it is refused

  function t(key, vars) {
    let s = M[key] ?? key;
    for (const [k, v] of Object.entries(vars || {})) s = s.split('{' + k + '}').join(String(v));
    return s;
  }

  // tn is t for a count: the text of the count's plural category in the
  // page's language (ahead.one, ahead.few, …), its {n} the count written
  // the language's way.
  function tn(key, n, vars) {
    const k = key + '.' + plurals.select(n);
    return t(k in M ? k : key + '.other', { n: numbers.format(n), ...vars });
  }

  function title(text) {
    document.title = text ? text + ' · ' + pageTitle : pageTitle;
  }

  // The operator's message, as the last answer carried it: shown as text
  // (textContent), never as markup.
  function operatorMessage(text) {
    const box = $('operator-message');
    const p = $('operator-message-text');
    if (typeof text !== 'string' || text === '') {
      box.hidden = true;
      p.textContent = '';
      return;
    }
    if (p.textContent !== text) p.textContent = text;
    box.hidden = false;
  }

  // ------------------------------------------------------------ states

  const sections = document.querySelectorAll('[data-state]');
  const announcer = $('announcer');

  // Every state the page has shown, with when (ms on the page clock): the
  // browser tests read it to see that nothing shows up unasked.
  const states = [];
  window.__states = states;

  function show(next) {
    if (next === state) return;
    states.push({ state: next, at: performance.now() });
    const focusHeading = state !== '' && state !== 'joining' || next === 'ready';
    state = next;
    for (const s of sections) s.hidden = s.dataset.state !== next;
    showCodeForm();
    showTell();
    if (next !== 'waiting' && next !== 'ready' && next !== 'returning') favicon('');
    document.dispatchEvent(new CustomEvent('waitroom:state', { detail: next })); // handoff.js
    const heading = document.querySelector('[data-state="' + next + '"] h1');
    // Move focus with the news for keyboard and screen-reader users, but not
    // on the first paint of the waiting card (nothing happened yet).
    if (heading && focusHeading) heading.focus({ preventScroll: false });
  }

  // announce tells screen readers politely (the place: at most once per
  // answer); urgently interrupts them (READY). What one answer has to say
  // (the place, then a note) is said together: a second text would cut
  // the first off.
  const unsaid = new Map(); // live region → text about to be set
  function announce(text, urgently) {
    const el = urgently ? $('announcer-urgent') : announcer;
    if (unsaid.has(el)) {
      unsaid.set(el, unsaid.get(el) + ' ' + text);
      return;
    }
    unsaid.set(el, text);
    // Re-setting the same text would not be announced again; clear first.
    el.textContent = '';
    setTimeout(() => {
      el.textContent = unsaid.get(el);
      unsaid.delete(el);
    }, 50);
  }

  function banner(text) {
    const b = $('banner');
    b.textContent = text || '';
    b.hidden = !text;
  }

  // ------------------------------------------------------------ the page tells you

  // When it is their turn (READY), and with the queue's notifyLeadSeconds
  // once when the estimate first comes within it, the page tells its
  // person however it can reach them away from the tab: the favicon and
  // the title (the tab strip), a short tone if they turned sound on here,
  // and a system notification if they allowed one. It runs from the answer
  // that brings the news, never from a timer of its own: a background
  // tab's timers are throttled (Chrome: once a minute after five minutes
  // hidden), the answer to a poll already sent is not. What it told is
  // kept in window.__told for the browser tests (docs/page.md, "The page
  // tells you").
  const told = [];
  window.__told = told;
  const tellStates = new Set(['waiting', 'opening', 'soldout']);
  const icons = { soon: root.dataset.faviconSoon, ready: root.dataset.faviconReady };
  const iconsAsIs = [...document.querySelectorAll('link[rel~="icon"]')];
  let iconLink = null;     // the icon the page put in place of the template's ('': none)
  let iconShown = '';      // '' (the template's) | 'soon' | 'ready'
  let soonTold = false;    // the lead notice went out for this place
  let farthest = 0;        // the longest known estimate seen for this place (s)
  let notice = null;       // the last notification shown
  let audio = null;        // the AudioContext, made by a click (autoplay rules)
  const SOUND_KEY = 'waitroom:sound';
  let soundOn = false;
  try { soundOn = localStorage.getItem(SOUND_KEY) === 'on'; } catch { /* private mode */ }

  // favicon puts the icon for kind in place of the template's own (every
  // <link rel=icon> it has, put back for ''): a new element, which every
  // browser that swaps icons at all redraws.
  function favicon(kind) {
    if (kind === iconShown || (kind && !icons[kind])) return;
    iconShown = kind;
    if (!kind) {
      iconLink?.replaceWith(...iconsAsIs);
      iconLink = null;
      return;
    }
    const link = document.createElement('link');
    link.rel = 'icon';
    link.type = 'image/svg+xml';
    link.href = icons[kind];
    if (iconLink) {
      iconLink.replaceWith(link);
    } else {
      for (const l of iconsAsIs) l.remove();
      document.head.appendChild(link);
    }
    iconLink = link;
  }

  // chime plays notes (Hz) on a tone the page makes itself (no audio file
  // to load). Browsers let a page play sound only after a click on it: the
  // sound toggle's click makes the AudioContext, and after a reload any
  // click or key on the page resumes it (listened for below).
  function chime(notes) {
    if (!audio || audio.state === 'closed') return '';
    if (audio.state === 'suspended') audio.resume().catch(() => {});
    let at = audio.currentTime + 0.02;
    for (const hz of notes) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.frequency.value = hz;
      gain.gain.setValueAtTime(0.0001, at);
      gain.gain.exponentialRampToValueAtTime(0.3, at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.4);
      osc.connect(gain).connect(audio.destination);
      osc.start(at);
      osc.stop(at + 0.45);
      at += 0.2;
    }
    return audio.state;
  }

  function wakeAudio() {
    const AC = window.AudioContext || window.webkitAudioContext;
    if (!AC) return;
    try {
      if (!audio) audio = new AC();
      if (audio.state === 'suspended') audio.resume().catch(() => {});
    } catch { /* no sound here */ }
  }

  // notify shows a system notification where the person allowed one. A
  // click on it brings the tab forward. One tag for the line: READY
  // replaces the lead notice rather than stacking under it. Chrome on
  // Android shows notifications only from a service worker (the
  // constructor throws): there the page tells by its title and sound alone.
  function notify(heading, body, urgent) {
    if (!('Notification' in window) || Notification.permission !== 'granted') return false;
    try {
      notice?.close();
      notice = new Notification(heading, {
        body, lang, dir: 'auto', tag: 'waitroom:' + queue, renotify: true, requireInteraction: urgent, icon: icons.ready,
      });
      notice.onclick = function () {
        window.focus();
        this.close();
      };
      return true;
    } catch {
      return false;
    }
  }

  // tellTurn tells the person: kind 'soon' (the lead) or 'ready'.
  function tellTurn(kind) {
    favicon(kind);
    const sound = soundOn ? chime(kind === 'ready' ? [660, 880] : [660]) : '';
    const notified = kind === 'ready' ? notify(t('readyHeading'), t('notifyReadyBody'), true)
      : notify(t('notifySoonTitle'), t('notifySoonBody'), false);
    told.push({ kind, at: performance.now(), hidden: document.hidden, sound, notified });
  }

  // nearTurn tells the lead notice once per place: when a WAITING answer's
  // known estimate first comes within the queue's notifyLeadSeconds (the
  // last front document read says it) after one beyond it; a person who
  // joins already that close is looking at the page, and is told at READY.
  function nearTurn(b) {
    const known = b.waitTimeKnown === undefined ? !b.paused && !b.stalled : b.waitTimeKnown;
    if (!known || b.position === null) return;
    const wait = b.estimatedWaitSeconds;
    const lead = front?.notifyLeadSeconds;
    if (lead > 0 && !soonTold && wait <= lead && farthest > lead) {
      soonTold = true;
      tellTurn('soon');
      announce(t('announceSoon'));
    }
    farthest = Math.max(farthest, wait);
  }

  // untold forgets what was told of a place that is no more.
  function untold() {
    soonTold = false;
    farthest = 0;
    notice?.close();
    favicon('');
  }

  // showTell shows the controls while a place is held, and the
  // notification button only where the browser can notify and the person
  // has not answered yet (asked only from its click, never on load).
  function showTell() {
    $('tell').hidden = !tellStates.has(state);
    const permission = 'Notification' in window ? Notification.permission : 'unsupported';
    $('notify-button').hidden = permission !== 'default';
    $('notify-note').textContent = permission === 'granted' ? t('notifyOn') : permission === 'denied' ? t('notifyBlocked') : '';
    $('sound-button').setAttribute('aria-pressed', String(soundOn));
  }

  function askToNotify() {
    const button = $('notify-button');
    const answered = () => {
      const had = document.activeElement === button;
      showTell();
      if (had && button.hidden) $('sound-button').focus();
    };
    try {
      // A promise in today's browsers; older Safari took a callback.
      const asked = Notification.requestPermission(answered);
      if (asked && asked.then) asked.then(answered, answered);
    } catch {
      answered();
    }
  }

  function toggleSound() {
    soundOn = !soundOn;
    try { localStorage.setItem(SOUND_KEY, soundOn ? 'on' : 'off'); } catch { /* private mode */ }
    if (soundOn) {
      wakeAudio();
      chime([660]); // what it will sound like, and proof it can
    }
    showTell();
  }

  $('notify-button').addEventListener('click', askToNotify);
  $('sound-button').addEventListener('click', toggleSound);
  // Sound remembered from an earlier visit: the first click or key on the
  // page is the gesture the browser waits for.
  for (const type of ['pointerdown', 'keydown']) {
    document.addEventListener(type, () => { if (soundOn) wakeAudio(); }, { once: true, capture: true });
  }

  // ------------------------------------------------------------ hidden or seen

  // The page tells its instance when it is hidden (a background tab, a
  // locked phone, the page frozen or left) and seen again, so that where
  // no-shows are skipped its place is judged by abandonAfterSecondsHidden
  // rather than abandonAfterSeconds: a beacon (POST …/entries/me/presence,
  // {"hidden": …}, which the browser sends even from a page being left),
  // and the hidden=1 its polls carry while hidden. saidHidden is what the
  // instance last heard, by either; a beacon goes only when that changes
  // and a place is held.
  const presenceURL = entriesURL + '/me/presence';
  let saidHidden = false;
  function sayPresence(hidden) {
    if (hidden === saidHidden || !tellStates.has(state) || !navigator.sendBeacon) return;
    try {
      if (navigator.sendBeacon(presenceURL, JSON.stringify({ hidden }))) saidHidden = hidden;
    } catch { /* the next poll says it */ }
  }
  document.addEventListener('visibilitychange', () => {
    sayPresence(document.hidden);
    if (!document.hidden) notice?.close(); // seen: the notification has done its work
  });
  window.addEventListener('pagehide', () => sayPresence(true));
  document.addEventListener('freeze', () => sayPresence(true));

  // ------------------------------------------------------------ timing

  // schedule runs fn after exactly `seconds` seconds: the server spreads
  // its answers (jitter) so that crowds don't poll in lockstep, and the page
  // must not undo that by asking early.
  function schedule(seconds, kind, fn) {
    clearTimeout(timer);
    const ms = Math.max(1, seconds) * 1000;
    dueAt = Date.now() + ms;
    dueKind = kind;
    due = { fn, kind, at: dueAt };
    timer = setTimeout(() => { dueKind = 'now'; tick(); fn(); }, ms);
    tick();
  }

  function cancelSchedule() {
    clearTimeout(timer);
    dueKind = '';
  }

  // tick refreshes the countdowns on screen (it sends nothing).
  function tick() {
    const left = Math.max(0, Math.ceil((dueAt - Date.now()) / 1000));
    if (state === 'opening') {
      const ms = opensAt - Date.now();
      $('opens-in').textContent = ms > 0 ? t('opensIn', { t: countdown(ms) }) : t('openingNow');
    }
    if (state === 'waiting') {
      $('next-check').textContent = dueKind === 'poll' && left > 0 ? t('nextCheck', { n: numbers.format(left) })
        : held ? t('watching') : t('checking');
    } else if (state === 'full' || state === 'crowded') {
      $(state + '-retry-in').textContent = dueKind === 'retry' && left > 0 ? t('retryIn', { n: numbers.format(left) }) : t('retrying');
    }
    if (dueKind === 'trouble') banner(t('trouble', { n: numbers.format(Math.max(left, 1)) }));
    if (state === 'ready' && ready) {
      const ms = ready.expiresAt - Date.now();
      if (ms <= 0) return expired();
      const s = Math.ceil(ms / 1000);
      $('expires').textContent = t('expiresIn', { t: countdown(ms) });
    }
  }
  setInterval(tick, 500);

  // ------------------------------------------------------------ the line

  // lineRequest enters the line (POST) or asks where we stand (GET). A POST
  // may carry a solved challenge (see joinWithChallenge) or the token of a
  // human check (see joinWithHumanCheck).
  async function lineRequest(method, solution, humanToken) {
    cancelSchedule();
    const rec = { method, sentAt: performance.now(), answeredAt: 0, status: 0, state: '', pollAfterSeconds: null, message: null };
    polls.push(rec);
    const mine = ++sent;
    const accessCode = method === 'POST' ? pendingCode : '';
    rec.withCode = accessCode !== '';
    let res, body;
    try {
      // waitSeconds: near the front the server holds the request until we
      // are in (or 20 s pass), so the page turns the moment it is our turn;
      // further back it answers at once, as a plain request.
      held = method === 'GET' && nearFront;
      tick();
      const headers = { Accept: 'application/json' };
      if (solution) headers['X-Challenge-Solution'] = solution;
      if (humanToken) headers['X-Human-Check-Token'] = humanToken;
      if (ticket && !handoffOut()) headers['X-Waitroom-Ticket'] = ticket.signed;
      if (accessCode) headers['Content-Type'] = 'application/json';
      lastAsked = Date.now();
      // A hidden page's poll says so (its mark is a hidden one); an enter
      // is a visible mark, whatever the page's state.
      rec.hidden = method === 'GET' && document.hidden;
      saidHidden = rec.hidden;
      const query = '?waitSeconds=' + HOLD_SECONDS + '&lang=' + encodeURIComponent(lang) + (rec.hidden ? '&hidden=1' : '');
      res = await fetch((method === 'POST' ? entriesURL : entriesURL + '/me') + query, {
        method,
        credentials: 'same-origin',
        cache: 'no-store',
        headers,
        body: accessCode ? JSON.stringify({ accessCode }) : undefined,
      });
      body = await res.json().catch(() => ({}));
    } catch {
      if (mine !== sent) return;
      held = false;
      rec.status = -1;
      return trouble(5, method);
    }
    rec.answeredAt = performance.now();
    // A code sent while another request waited (a poll held near the
    // front): the answer to the later one is what stands.
    if (mine !== sent) {
      rec.stale = true;
      return;
    }
    held = false;
    rec.status = res.status;
    rec.code = body.error?.code || '';
    rec.state = body.status || '';
    rec.pollAfterSeconds = body.pollAfterSeconds ?? null;
    rec.message = body.message ?? null;
    const skew = serverSkew(res);
    banner('');
    if (res.ok) operatorMessage(body.message);
    if (res.ok) queueMicrotask(() => sayPresence(document.hidden)); // hidden while an enter was answered

    if (res.ok) {
      if (method === 'POST') refused = humanAsked = 0;
      if (accessCode) codeJudged(body, '');
      // A lane's place is asked of the instance (no ticket comes with it;
      // none is kept, should one come).
      ticket = inLane(body.lane) ? null : readTicket(body.ticket);
      switch (body.status) {
        case 'WAITING': return body.opensAt ? beforeOpening(body, skew) : waiting(body);
        case 'READY': return admitted(body, skew);
        case 'SOLD_OUT': return soldOut(true, body.pollAfterSeconds, 'GET');
        case 'MOVED': return moved();
        default: return notInLine();
      }
    }
    const code = body.error?.code;
    const retryAfter = parseInt(res.headers.get('Retry-After'), 10);
    if (rec.withCode && (code === 'invalid_code' || code === 'code_used' || res.status === 400)) {
      codeJudged(null, code === 'invalid_code' ? 'codeInvalid' : code === 'code_used' ? 'codeUsed' : 'codeError');
      return resume();
    }
    if (res.status === 403 && code === 'challenge_required' && method === 'POST') return joinWithChallenge(body.error.challengeUrl);
    if (res.status === 403 && code === 'human_check_required' && method === 'POST') return joinWithHumanCheck(body.error);
    if (res.status === 403 && code === 'suspected_bot') return show('unsupported');
    if (res.status === 403 && code === 'signin_required') return show('signin');
    if (res.status === 403 && code === 'ticket_invalid' && ticket) {
      ticket = null; // not this server's any more (a new secret): ask without it
      return lineRequest(method);
    }
    if (res.status === 403 && code === 'queue_closed') return show('closed');
    if (res.status === 410 && code === 'sold_out') return soldOut(false, retryAfter, 'POST');
    if (res.status === 429 && code === 'too_many_entries') return crowded(retryAfter > 0 ? retryAfter : 5);
    if (res.status === 429 && code === 'queue_full') return full(retryAfter > 0 ? retryAfter : 30);
    if (res.status === 404 || code === 'invalid_queue_name') return show('notfound');
    if (res.status === 401 || code === 'invalid_user_id') return show('session');
    return trouble(retryAfter > 0 ? retryAfter : 5, method);
  }

  // ------------------------------------------------------------ access codes

  // A code moves the visitor to its lane's line: to the back of it, so
  // nobody's place rises. The form is there only when a lane of the queue
  // takes codes; it is shown before a place is taken and while in the
  // public lane. The code rides on an enter (POST), in its JSON body, and
  // is forgotten once the line has judged it; a code turned down leaves the
  // visitor where they stood, the next request as it was due.
  const codeForm = $('code-form');
  const codeStates = new Set(['joining', 'waiting', 'opening', 'left', 'full', 'crowded']);

  function inLane(name) {
    return typeof name === 'string' && name !== '' && name !== 'public';
  }

  function showCodeForm() {
    if (codeForm) codeForm.hidden = !codeStates.has(state) || inLane(lane);
  }

  function codeSay(key, kind, vars) {
    const m = $('code-message');
    m.textContent = key ? t(key, vars) : '';
    m.className = 'order-message code-message' + (kind ? ' is-' + kind : '');
  }

  // codeJudged: the line took the code (b: its answer) or turned it down
  // (refusal: the text's key).
  function codeJudged(b, refusal) {
    pendingCode = '';
    $('code-button').disabled = false;
    if (refusal) {
      codeSay(refusal, 'error');
      $('access-code').focus();
      return;
    }
    $('access-code').value = '';
    codeSay('');
    if (inLane(b.lane)) announce(t('codeAccepted', { lane: b.lane }));
  }

  // resume sends, when it was due, the request a refused code came
  // between. With nothing due, the code cut short a request in flight (a
  // poll held near the front, an entry): it is sent again, without the
  // code.
  function resume() {
    if (cutShort) {
      const { fn, kind, at } = cutShort;
      cutShort = null;
      return schedule((at - Date.now()) / 1000, kind, fn);
    }
    if (state === 'waiting' || state === 'opening') return lineRequest('GET');
    if (state === 'joining' || state === 'full' || state === 'crowded') return lineRequest('POST');
  }

  if (codeForm) {
    codeForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const code = $('access-code').value.trim();
      if (!code || pendingCode) return;
      pendingCode = code;
      // What was pending (nothing once it has gone out, or was called off).
      cutShort = dueKind === 'poll' || dueKind === 'retry' || dueKind === 'trouble' ? due : null;
      $('code-button').disabled = true;
      codeSay('codeChecking');
      lineRequest('POST');
    });
  }

  // ------------------------------------------------------------ the challenge

  // A line may ask an anonymous visitor's browser for a little work before
  // it takes a place: a proof of work (ALTCHA v2, PBKDF2/SHA-256; see
  // challenge-worker.js), about a second of it, which costs a script that
  // wants a thousand places a thousand times that. It runs in Web Workers,
  // one per core, while the page goes on saying what it said ("Joining the
  // line…"): nothing for the shopper to do or see. What it took is kept in
  // window.__challenge for the browser tests (and the curious).
  const workerURL = root.dataset.worker;
  let refused = 0; // solutions the server refused in a row (expired, used)

  async function joinWithChallenge(url) {
    if (++refused > 3) return show('unsupported');
    let solution;
    try {
      solution = await solveChallenge(url);
    } catch (err) {
      if (err.network) return trouble(5, 'POST');
      return show('unsupported'); // no Web Workers or WebCrypto (a page not on HTTPS)
    }
    return lineRequest('POST', solution);
  }

  // ------------------------------------------------------------ the human check

  // A line may instead ask for a human check from a provider (entry
  // turnstile): its widget, whose script this page loads only now, from
  // the origin the page's Content-Security-Policy allows for it. The
  // visitor ticks it; its token goes with the next POST, once. Asked again
  // (the token ran out, or was spent), the page resets the widget and says
  // why. Turnstile's client API is hCaptcha's and reCAPTCHA's too. What it
  // took is kept in window.__humanCheck for the browser tests.
  let humanAsked = 0;      // checks asked for in a row (a place resets it)
  let humanWidget = null;  // the widget's id, once rendered
  let humanScript = null;  // the promise of the provider's script
  const humanRecord = { scriptUrl: '', loads: 0, renders: 0, tokens: 0 };
  window.__humanCheck = humanRecord;

  async function joinWithHumanCheck(err) {
    if (++humanAsked > 5) return show('unsupported');
    let token;
    try {
      token = await humanCheck(err.siteKey, err.scriptUrl, humanAsked > 1);
    } catch {
      humanScript = null; // a script that did not load is tried again
      return trouble(5, 'POST');
    }
    humanRecord.tokens++;
    show('joining');
    return lineRequest('POST', null, token);
  }

  function loadHumanScript(url) {
    if (!humanScript) {
      humanScript = new Promise((resolve, reject) => {
        const u = new URL(url, location.href);
        u.searchParams.set('render', 'explicit');
        const s = document.createElement('script');
        s.src = u.href;
        s.async = true;
        s.onload = () => resolve(window.turnstile || window.hcaptcha || window.grecaptcha);
        s.onerror = () => { s.remove(); reject(new Error('human check: its script did not load')); };
        humanRecord.scriptUrl = u.href;
        humanRecord.loads++;
        document.head.appendChild(s);
      });
    }
    return humanScript;
  }

  // humanCheck shows the widget afresh (a token is good once) and waits
  // for the visitor to pass it.
  async function humanCheck(siteKey, scriptUrl, again) {
    const api = await loadHumanScript(scriptUrl);
    if (!api || typeof api.render !== 'function') throw new Error('human check: no widget');
    $('humancheck-again').hidden = !again;
    show('humancheck');
    return new Promise((resolve) => {
      if (humanWidget !== null && typeof api.remove === 'function') api.remove(humanWidget);
      $('human-check-widget').textContent = '';
      humanRecord.renders++;
      humanWidget = api.render($('human-check-widget'), {
        sitekey: siteKey, action: 'enter',
        callback: (token) => { if (token) resolve(token); },
        // The widget asks again by itself; the page waits for its token.
        'expired-callback': () => {}, 'error-callback': () => true,
      });
    });
  }

  async function solveChallenge(url) {
    const record = { url, startedAt: performance.now(), fetchedAt: 0, solvedAt: 0, counter: -1, workers: 0, cost: 0 };
    window.__challenge = record;
    let challenge;
    try {
      const res = await fetch(url, { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } });
      if (!res.ok) throw new Error('challenge: ' + res.status);
      challenge = await res.json();
    } catch (err) {
      err.network = true;
      throw err;
    }
    record.fetchedAt = performance.now();
    record.cost = challenge.parameters.cost;
    if (!window.Worker || !window.crypto?.subtle) throw new Error('no Web Workers or WebCrypto here');
    const n = record.workers = Math.min(Math.max(navigator.hardwareConcurrency || 2, 1), 8);
    const workers = [];
    try {
      const found = await new Promise((resolve, reject) => {
        for (let i = 0; i < n; i++) {
          const w = new Worker(workerURL);
          workers.push(w);
          w.onmessage = (e) => { if (e.data) resolve(e.data); };
          w.onerror = (e) => reject(new Error(e.message || 'worker failed'));
          w.postMessage({ parameters: challenge.parameters, start: i, step: n });
        }
      });
      record.solvedAt = performance.now();
      record.counter = found.counter;
      return btoa(JSON.stringify({ challenge, solution: { counter: found.counter, derivedKey: found.derivedKey } }));
    } finally {
      for (const w of workers) w.terminate();
    }
  }

  // serverSkew is how far the server's clock is ahead of ours, so the
  // token's expiry counts down right even on a phone with a wrong clock.
  function serverSkew(res) {
    const d = Date.parse(res.headers.get('Date') || '');
    return Number.isFinite(d) ? d - Date.now() : 0;
  }

  // The built-in page's footer, and what it said: a draw says otherwise.
  const foot = document.querySelector('footer.foot');
  const footText = foot ? foot.textContent : '';

  function waiting(b) {
    render(b);
    let after = Number.isFinite(b.pollAfterSeconds) && b.pollAfterSeconds > 0 ? b.pollAfterSeconds : 5;
    if (handoffOut()) after = Math.min(after, HANDOFF_POLL_SECONDS);
    // With a ticket and a place further than ASK_AHEAD_SECONDS from the
    // front, the next look is at the front document, unless the last one
    // said this place is where the instance must answer (or a handoff's
    // link is out: only the instance says MOVED).
    const byFront = ticket && !handoffOut() && b.position !== null && b.estimatedWaitSeconds > ASK_AHEAD_SECONDS &&
      !(front && b.position <= front.askWithin);
    schedule(after, 'poll', byFront ? readFront : () => lineRequest('GET'));
  }

  // render shows a WAITING answer, the instance's or one worked out from
  // the front document.
  function render(b) {
    showLane(b.lane);
    show('waiting');
    nearTurn(b);
    favicon(soonTold ? 'soon' : '');
    lookForDraw();
    // A line that draws whom it lets in (queueingMethod random) has no
    // place to show: position is null, and the page says it is a draw.
    const drawn = b.position === null;
    $('place').hidden = $('progress').hidden = $('progress-meta').hidden = drawn;
    $('draw-note').hidden = !drawn;
    if (foot) foot.textContent = drawn ? t('footerDrawn') : footText;
    if (drawn) {
      saved.drop('first');
      lastPosition = 0;
      title(t('titleDrawn'));
    } else {
      place(b.position);
    }
    $('queue-length').textContent = numbers.format(b.queueLength);
    $('length-label').textContent = inLane(lane) ? t('laneLengthLabel', { lane }) : t('lengthLabel');
    showWait(waitText(b));
    nearFront = !b.paused && b.estimatedWaitSeconds <= 2; // where the server holds a poll
    $('paused-note').hidden = !b.paused;
    $('stalled-note').hidden = !b.stalled;
    $('beyond-stock-note').hidden = !b.beyondStock;
    if (b.beyondStock && !beyondStock) announce(t('beyondStockNote'));
    beyondStock = !!b.beyondStock;
  }

  // showLane takes the lane an answer names: a new lane is a new line,
  // whose way to the front starts afresh and whose place is said again.
  function showLane(name) {
    const next = typeof name === 'string' ? name : '';
    if (next === lane) return;
    if (lane !== '' || inLane(next)) {
      saved.drop('first');
      lastPosition = 0;
    }
    lane = next;
    $('place-label').textContent = inLane(lane) ? t('lanePlaceLabel', { lane }) : t('positionLabel');
    showCodeForm();
  }

  // ------------------------------------------------------------ the front document

  // For the browser tests: the ticket the page would read the front
  // document by (null: it asks its instance).
  window.__ticket = () => (ticket ? ticket.signed : null);

  // readTicket reads a signed ticket (t1.<epoch>.<ticket>.<mac>): the page
  // only reads its two numbers; the server alone can check the mac.
  function readTicket(signed) {
    const m = typeof signed === 'string' && /^t1\.(-?\d+)\.(\d+)\.[A-Za-z0-9_-]+$/.exec(signed);
    return m ? { signed, epoch: Number(m[1]), n: Number(m[2]) } : null;
  }

  // For the browser tests: the estimate on the cases every store and the
  // server's Go answer alike (queue/storetest's estimate cases).
  window.__estimate = estimate;
  // And the range (issue 54) on the document's pace: {seconds, low, high, known}.
  window.__range = range;
  function jitter(seconds) {
    return Math.max(1, Math.round(seconds * (0.8 + 0.4 * Math.random())));
  }
  function pollBand(est) {
    return est >= 60 ? 10 : est >= 10 ? 5 : 2;
  }

  // frontMessage is the operator's message for this page's language from
  // every language's text: the language, then its primary tag, then
  // English, then the first.
  function frontMessage(m) {
    if (typeof m === 'string' || !m) return m || '';
    const primary = lang.split('-')[0];
    const key = [lang, primary, 'en'].find((k) => k in m) || Object.keys(m)[0];
    return m[key] || '';
  }

  // readFront reads the front document and works out the standing from
  // it, or asks the instance where the document cannot answer for it.
  async function readFront() {
    cancelSchedule();
    if (handoffOut()) return lineRequest('GET'); // only the instance says MOVED
    const rec = { method: 'FRONT', sentAt: performance.now(), answeredAt: 0, status: 0, state: '', pollAfterSeconds: null, message: null, position: null };
    polls.push(rec);
    let d;
    try {
      // No cookie: the document is the same for everyone, and a cache
      // keys it without one.
      const res = await fetch(frontURL, { credentials: 'omit', headers: { Accept: 'application/json' } });
      rec.status = res.status;
      if (!res.ok) throw new Error('front: ' + res.status);
      d = await res.json();
    } catch {
      rec.answeredAt = performance.now();
      rec.pollAfterSeconds = 0;
      return lineRequest('GET'); // the instance answers as before
    }
    rec.answeredAt = performance.now();
    front = d;
    const p = placeFromFront(d, ticket);
    const presenceDue = p && d.presence && p.lowest <= d.presence.within && Date.now() - lastAsked >= d.presence.everySeconds * 1000;
    if (!p || p.lowest <= d.askWithin || presenceDue) {
      rec.pollAfterSeconds = 0; // the instance is asked at once
      return lineRequest('GET');
    }
    operatorMessage(frontMessage(d.message));
    rec.message = frontMessage(d.message) || null;
    if (d.soldOut) {
      rec.state = 'SOLD_OUT';
      rec.pollAfterSeconds = jitter(d.soldOutPollSeconds);
      // The place is kept; the document is read again as seldom as the
      // instance would have the page ask.
      return soldOut(true, rec.pollAfterSeconds, 'FRONT');
    }
    const wait = range(p.position, d.pace);
    const after = jitter(pollBand(wait.seconds));
    rec.state = 'WAITING';
    rec.pollAfterSeconds = after;
    rec.position = p.position;
    const standing = {
      lane, position: p.position, queueLength: d.queueLength, estimatedWaitSeconds: wait.seconds, paused: d.pace.paused,
      stalled: d.pace.stalled && !d.pace.paused, beyondStock: d.unitsLeft !== null && p.position > d.unitsLeft,
    };
    render({ ...standing, ...frontWait(wait, standing) });
    nearFront = false; // the instance holds no front reader
    schedule(after, 'poll', readFront);
  }

  // frontWait is what the instance's answer would say of the wait, from
  // the front document: its range (wait: range()), unless the document
  // says the wait is not known, for the first of the server's reasons
  // that holds (queue.Pace.Estimate: paused, stalled, fewer units left
  // than people ahead; then the model's own, nobody let in). A document
  // without the model (an older server's) gives the point alone, said as
  // that server's answers were.
  function frontWait(wait, b) {
    const reason = b.paused ? 'paused' : b.stalled ? 'stalled' : b.beyondStock ? 'beyond_stock' : wait.known ? '' : wait.reason || 'paused';
    if (reason) return { waitTimeKnown: false, waitTimeUnknownReason: reason };
    if (wait.low === null) return {};
    return { waitTimeKnown: true, estimatedWaitRange: { low: wait.low, high: wait.high } };
  }

  // place shows the visitor's place in line, pos, and the way from the
  // first place this tab saw (0%) to the front (100%).
  function place(pos) {
    let first = saved.get('first');
    if (!(first >= pos)) {
      first = pos;
      saved.set('first', first);
    }
    $('position').textContent = numbers.format(pos);
    const ahead = pos - 1;
    $('ahead').textContent = ahead <= 0 ? t('aheadNone') : tn('ahead', ahead);
    const pct = first > 0 ? Math.round(((first - pos) / first) * 100) : 0;
    progress(pct, t('progressText', { n: numbers.format(pos) }));
    $('progress-from').textContent = first > pos ? t('progressFrom', { n: numbers.format(first) }) : '';

    if (pos !== lastPosition) {
      announce(inLane(lane) ? t('announceLane', { n: numbers.format(pos), lane }) : t('announcePosition', { n: numbers.format(pos) }));
      lastPosition = pos;
    }
    title(t(soonTold ? 'titleSoon' : 'titleWaiting', { n: numbers.format(pos) }));
  }

  // ------------------------------------------------------------ a draw anyone can check

  // The visitor's id in the opening's draw (the pre-queue answer's draw:
  // participant and salt) is kept per line in localStorage, with the
  // opening it is for, so that once the record is published the page shows
  // where the id stands in its order, after a reload or in another tab.
  const drawKept = {
    key: 'waitroom:' + queue + ':draw',
    get() {
      try { return JSON.parse(localStorage.getItem(this.key)); } catch { return null; }
    },
    set(v) {
      try { localStorage.setItem(this.key, JSON.stringify(v)); } catch { /* private mode */ }
    },
  };
  window.__drawKept = () => drawKept.get();

  function showDrawId(d, opensAtText) {
    if (!d || typeof d.participant !== 'string') return;
    drawKept.set({ participant: d.participant, salt: d.salt, opensAt: opensAtText });
    $('draw-id').textContent = d.participant;
    $('draw-salt').textContent = d.salt;
    $('draw-check').hidden = false;
  }

  // lookForDraw asks where the kept id stands in the draw's order once the
  // record is out (?participant=: a small answer, not the record, which
  // lists everyone) and shows it (nothing when the id is not in it): once
  // a visit, and again, at most twice and 10 s apart, only while it is not
  // out yet.
  let drawLooked = 0;
  let drawTries = 0;
  let drawDone = false;
  async function lookForDraw() {
    const mine = drawKept.get();
    if (!mine || drawDone || drawTries >= 3 || Date.now() - drawLooked < 10000) return;
    drawLooked = Date.now();
    drawTries++;
    try {
      const url = drawURL + '?participant=' + encodeURIComponent(mine.participant);
      const res = await fetch(url, { credentials: 'omit', headers: { Accept: 'application/json' } });
      if (!res.ok) return;
      const d = await res.json();
      const drawn = (d.commitments || []).find((c) => c.state === 'drawn' && Date.parse(c.opensAt) === Date.parse(mine.opensAt));
      if (!drawn) return; // not out yet
      drawDone = true;
      const st = d.standing;
      if (!st || st.commitment !== drawn.commitment) return;
      const p = $('draw-standing');
      p.textContent = t('drawStanding', { n: numbers.format(st.place), total: numbers.format(st.of) });
      p.hidden = false;
    } catch { /* the line goes on without it */ }
  }

  // beforeOpening: in the pre-queue, with no place until the line opens;
  // the page counts down to the opening (on the server's clock) and asks
  // again when the server says, which is shortly after it.
  function beforeOpening(b, skew) {
    opensAt = Date.parse(b.opensAt) - skew;
    showLane(b.lane);
    showDrawId(b.draw, b.opensAt);
    show('opening');
    title(t('titleOpening'));
    nearFront = false;
    const after = Number.isFinite(b.pollAfterSeconds) && b.pollAfterSeconds > 0 ? b.pollAfterSeconds : 5;
    schedule(after, 'poll', () => lineRequest('GET'));
  }

  // countdown says a time left as h:mm:ss or m:ss.
  function countdown(ms) {
    const s = Math.ceil(ms / 1000);
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const ss = twoDigits.format(s % 60);
    return h > 0 ? numbers.format(h) + ':' + twoDigits.format(m) + ':' + ss : numbers.format(m) + ':' + ss;
  }

  function progress(pct, text) {
    const p = $('progress');
    p.setAttribute('aria-valuenow', String(pct));
    p.setAttribute('aria-valuetext', text);
    $('progress-bar').style.width = Math.max(2, Math.min(100, pct)) + '%';
  }

  // waitText says a WAITING answer's wait (the instance's, or one worked
  // out from the front document): {text: its range} while waitTimeKnown,
  // else {text: not known, why: waitTimeUnknownReason in words} ('': no
  // words for it). The page without JavaScript says it alike
  // (internal/web/noscript.go's wait).
  function waitText(b) {
    if (b.waitTimeKnown === undefined) {
      // An older instance's answer (a rolling upgrade): its point.
      return b.paused ? unknownText('paused') : b.stalled ? unknownText('stalled') : { text: eta(b.estimatedWaitSeconds), why: '' };
    }
    if (!b.waitTimeKnown || !b.estimatedWaitRange) return unknownText(b.waitTimeUnknownReason);
    return { text: waitRange(b.estimatedWaitSeconds, b.estimatedWaitRange.low, b.estimatedWaitRange.high), why: '' };
  }

  const unknownTexts = { paused: 'etaWhyPaused', stalled: 'etaWhyStalled', opening: 'etaWhyOpening', sold_out: 'etaWhySoldOut', beyond_stock: 'etaWhyBeyondStock' };
  function unknownText(reason) {
    const why = unknownTexts[reason];
    return { text: t('etaUnknown'), why: why ? t(why) : '' };
  }

  // showWait puts the wait in the card: why it is not known goes on a line
  // of its own (.eta-why), so the fact stays short on a phone.
  function showWait(w) {
    const el = $('eta');
    if (!w.why) {
      el.textContent = w.text;
      return;
    }
    const why = document.createElement('span');
    why.className = 'eta-why';
    why.textContent = w.why;
    el.replaceChildren(w.text, ' ', why);
  }

  // waitRange says a known wait's range (its median: seconds) in words
  // people use: in seconds while its top is under two minutes (to 5 s, or
  // 10 s above half a minute), else in minutes, else from two hours in
  // hours; rounded outward, so the range said still holds the one
  // computed; one number where both ends round alike, "up to" where the
  // bottom rounds to 0. Within the next tick (a median of 0), any moment
  // now.
  function waitRange(seconds, low, high) {
    if (!(seconds > 0)) return t('etaSoon');
    let unit = 3600, keys = ['etaRangeHours', 'etaUpToHours', 'etaHours'];
    if (high < 120) {
      unit = high <= 30 ? 5 : 10;
      keys = ['etaRangeSeconds', 'etaUpToSeconds', 'etaAboutSeconds'];
    } else if (high < 7200) {
      unit = 60;
      keys = ['etaRangeMinutes', 'etaUpToMinutes', 'etaMinutes'];
    }
    let lo = Math.floor(low / unit), hi = Math.ceil(high / unit);
    if (unit < 60) {
      lo *= unit;
      hi *= unit;
    }
    if (lo === hi) return unit < 60 ? t(keys[2], { n: numbers.format(hi) }) : tn(keys[2], hi);
    if (lo === 0) return t(keys[1], { n: numbers.format(hi) });
    return t(keys[0], { low: numbers.format(lo), high: numbers.format(hi) });
  }
  // For the browser tests: the words for a WAITING answer's wait.
  window.__waitText = waitText;

  // eta says a point estimate in words people use (an older instance's
  // answer, which carries no range).
  function eta(seconds) {
    if (!(seconds > 0)) return t('etaSoon');
    if (seconds < 60) return t('etaUnderMinute');
    const minutes = Math.round(seconds / 60);
    if (minutes < 60) return tn('etaMinutes', minutes);
    return tn('etaHours', Math.round(minutes / 60));
  }

  function admitted(b, skew) {
    cancelSchedule();
    if (gateway) return backToShop();
    const wasReady = state === 'ready';
    ready = { token: b.token, expiresAt: Date.parse(b.expiresAt) - skew };
    saved.drop('first');
    lastPosition = 0;
    show('ready');
    lookForDraw();
    title(t('titleReady'));
    if (!wasReady) announce(t('announceReady'), true);
    // Told once per entry, a reload included (its expiry names it).
    if (saved.get('told') !== b.expiresAt) {
      saved.set('told', b.expiresAt);
      tellTurn('ready');
    } else {
      favicon('ready');
    }
    const product = $('product');
    if (!product.value && params.get('product')) product.value = params.get('product');
    describeProduct();
    tick();
    if (handoffOut()) schedule(HANDOFF_POLL_SECONDS, 'poll', () => lineRequest('GET')); // until MOVED, or the link expires
  }

  // backToShop sends the admitted shopper back where they were going. The
  // server checks that ?return= is a path on this site before it sets the
  // entry cookie and redirects (no open redirect), so the page passes it on
  // as it came.
  function backToShop() {
    saved.drop('first');
    const link = $('continue-link');
    link.href = base + '/return?queue=' + encodeURIComponent(queue) + '&to=' + encodeURIComponent(params.get('return') || '/');
    show('returning');
    title(t('titleReady'));
    announce(t('announceReady'), true);
    tellTurn('ready'); // the notification outlives the page; the tone may be cut short
    location.replace(link.href);
  }

  // soldOut: the sale has nothing left, and nothing moves until a restock:
  // no place, estimate or countdown. Whoever holds a place keeps it and
  // asks again when the server says (the front document, when that is
  // what said it), so a restock gives it back within one poll; whoever was
  // refused one (410) tries to enter again as seldom.
  function soldOut(keepsPlace, seconds, method) {
    nearFront = false;
    beyondStock = false;
    lastPosition = 0; // a restock announces the place again
    $('soldout-kept').hidden = !keepsPlace;
    $('soldout-no-place').hidden = keepsPlace;
    if (state !== 'soldout') announce(t('soldOutHeading') + '. ' + t('soldOutText'));
    show('soldout');
    title(t('titleSoldOut'));
    schedule(seconds > 0 ? seconds : 30, 'poll', method === 'FRONT' ? readFront : () => lineRequest(method));
  }

  function notInLine() {
    cancelSchedule();
    ready = null;
    untold();
    show('left');
    title('');
  }

  // ------------------------------------------------------------ handoff (issue 55)

  // While a link made by handoff.js is out, the page asks its instance,
  // every few seconds and with no ticket shown (whose place the instance
  // would otherwise work out from its snapshot), so that the claim shows
  // here as MOVED soon after.
  const HANDOFF_POLL_SECONDS = 3;
  function handoffOut() {
    return (window.waitroomHandoff?.until || 0) > Date.now();
  }

  document.addEventListener('waitroom:handoff', () => {
    if (state === 'waiting' || state === 'ready' || state === 'soldout') schedule(1, 'poll', () => lineRequest('GET'));
  });

  // moved: the place went to another device with the link made here; the
  // page holds none, and stops asking, and takes back what it told of the
  // place (a READY notification left up would say it is their turn here).
  function moved() {
    cancelSchedule();
    ready = null;
    untold();
    ticket = null;
    saved.drop('first');
    lastPosition = 0;
    show('moved');
    title(t('movedHeading'));
    announce(t('movedHeading'), true);
  }

  function expired() {
    cancelSchedule();
    ready = null;
    untold();
    show('expired');
    title(t('titleExpired'));
  }

  function full(seconds) {
    show('full');
    schedule(seconds, 'retry', () => lineRequest('POST'));
  }

  // crowded: this network (one address, as behind a carrier's NAT) has
  // taken its share of new places for the moment; try again when told.
  function crowded(seconds) {
    show('crowded');
    schedule(seconds, 'retry', () => lineRequest('POST'));
  }

  // trouble keeps what is on screen and tries the same request again.
  function trouble(seconds, method) {
    schedule(seconds, 'trouble', () => lineRequest(method));
  }

  function enterAgain() {
    saved.drop('first');
    saved.drop('order');
    ready = null;
    untold();
    lastPosition = 0;
    show('joining');
    lineRequest('POST');
  }

  // ------------------------------------------------------------ ordering

  const form = $('order-form');
  const message = $('order-message');

  function say(key, kind) {
    message.textContent = key ? t(key) : '';
    message.className = 'order-message' + (kind ? ' is-' + kind : '');
  }

  let describing = 0;
  const productNames = new Map(); // id → name, for the receipt
  async function describeProduct() {
    const id = $('product').value.trim();
    const info = $('product-info');
    const mine = ++describing;
    info.textContent = '';
    if (!id) return;
    try {
      const res = await fetch(base + '/api/v1/products/' + encodeURIComponent(id), { credentials: 'same-origin', cache: 'no-store' });
      if (!res.ok || mine !== describing) return;
      const p = await res.json();
      if (p.name) productNames.set(p.id, p.name);
      info.textContent = t('productLeft', { name: p.name || p.id, n: numbers.format(p.stock) });
    } catch { /* the info line is a nicety */ }
  }
  $('product').addEventListener('change', describeProduct);

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!ready || ordering) return;
    const productId = $('product').value.trim();
    const quantity = parseInt($('quantity').value, 10);
    if (!productId) {
      say('productMissing', 'error');
      $('product').focus();
      return;
    }
    if (!(quantity >= 1 && quantity <= 100)) {
      say('invalidOrder', 'error');
      $('quantity').focus();
      return;
    }
    ordering = true;
    const button = $('order-button');
    button.disabled = true;
    say('ordering');
    let res, body;
    try {
      res = await fetch(base + '/api/v1/orders', {
        method: 'POST',
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-Entry-Token': ready.token },
        body: JSON.stringify({ productId, quantity }),
      });
      body = await res.json().catch(() => ({}));
    } catch {
      res = null;
    } finally {
      ordering = false;
      button.disabled = false;
    }
    if (!res) return say('orderError', 'error');
    if (res.status === 201 || res.status === 200) return done(body);
    switch (body.error?.code) {
      case 'out_of_stock': describeProduct(); return say('outOfStock', 'warn');
      case 'payment_failed': return say('paymentFailed', 'warn');
      case 'order_in_progress': return say('orderInProgress', 'warn');
      case 'product_not_found': return say('productNotFound', 'error');
      case 'invalid_request': return say('invalidOrder', 'error');
      case 'entry_token_invalid': say(''); return expired();
      case 'unauthenticated': return show('session');
      default: return say('orderError', 'error');
    }
  });

  function done(o) {
    const order = { id: o.id, product: productNames.get(o.productId) || o.productId, quantity: o.quantity };
    saved.set('order', order);
    showDone(order);
    announce(t('doneHeading') + '. ' + t('orderNumber', { id: order.id }));
  }

  function showDone(order) {
    cancelSchedule();
    ready = null;
    untold();
    say('');
    $('order-number').textContent = t('orderNumber', { id: order.id });
    $('order-detail').textContent = t('doneDetail', { p: order.product, q: numbers.format(order.quantity) });
    show('done');
    title(t('titleDone'));
  }

  // ------------------------------------------------------------ start

  for (const b of document.querySelectorAll('[data-action="enter"]')) b.addEventListener('click', enterAgain);
  for (const b of document.querySelectorAll('[data-action="reload"]')) b.addEventListener('click', () => location.reload());

  const order = saved.get('order');
  if (order && order.id) {
    showDone(order); // already bought in this tab: don't queue again by accident
  } else {
    show('joining');
    lineRequest('POST');
  }
})();
