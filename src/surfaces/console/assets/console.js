/* global document, window, navigator, console, Notification, MutationObserver, URLSearchParams, setInterval */
// The web console's behaviour in the browser, loaded by every page (the pages' CSP allows no
// inline script): the live/offline indicator, the count of waiting approvals in the title,
// relative times and countdowns, j/k/a/d on the keyboard, and browser notifications. Pages work
// without it: every action is a plain form.
(function () {
  'use strict';
  var body = document.body;

  // Live or offline: the htmx SSE extension says when the page's stream opens and when it fails.
  var status = document.getElementById('live-status');
  function setLive(live) {
    if (!status) return;
    status.textContent = live ? 'live' : 'offline';
    status.classList.toggle('offline', !live);
  }
  document.addEventListener('htmx:sseOpen', function () {
    setLive(true);
  });
  document.addEventListener('htmx:sseError', function () {
    setLive(false);
  });
  document.addEventListener('htmx:sseClose', function () {
    setLive(false);
  });

  // The title carries the count of waiting approvals, which the stream keeps in the nav badge.
  function waiting() {
    var badge = document.querySelector('#waiting [data-count]');
    return badge ? Number(badge.getAttribute('data-count')) || 0 : 0;
  }
  function updateTitle() {
    var n = waiting();
    document.title =
      (n > 0 ? '(' + n + ') ' : '') + body.getAttribute('data-title') + ' · switchboard';
  }
  var badge = document.getElementById('waiting');
  if (badge) new MutationObserver(updateTitle).observe(badge, { childList: true, subtree: true });

  // Times: the server writes UTC; here they read "3 min ago", and countdowns tick.
  function rough(ms) {
    var s = Math.round(ms / 1000);
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min';
    if (s < 86400) return Math.floor(s / 3600) + ' h';
    return Math.floor(s / 86400) + ' d';
  }
  function clock(ms) {
    var s = Math.ceil(ms / 1000);
    var m = Math.floor(s / 60);
    var rest = s % 60;
    return m + ':' + (rest < 10 ? '0' : '') + rest;
  }
  function tick() {
    var now = Date.now();
    var times = document.querySelectorAll('time[data-relative]');
    for (var i = 0; i < times.length; i++) {
      var el = times[i];
      var ms = Date.parse(el.getAttribute('datetime')) - now;
      if (el.parentElement && el.parentElement.hasAttribute('data-countdown')) {
        el.textContent = ms > 0 ? 'in ' + clock(ms) : 'now';
      } else {
        el.textContent = ms > 0 ? 'in ' + rough(ms) : rough(-ms) + ' ago';
      }
    }
  }
  tick();
  setInterval(tick, 1000);
  document.addEventListener('htmx:afterSettle', tick);

  // Notifications: permission is asked on a click, never on load; then every approval the
  // stream announces (into the hidden #notify) becomes one, and this browser subscribes to Web
  // Push, so that approvals are told with every page closed (the service worker, /sw.js).
  var notifyButton = document.getElementById('notify-button');
  var canNotify = 'Notification' in window;
  if (canNotify && notifyButton && Notification.permission === 'default') {
    notifyButton.hidden = false;
    notifyButton.addEventListener('click', function () {
      Notification.requestPermission().then(function () {
        notifyButton.hidden = Notification.permission !== 'default';
        subscribePush();
      });
    });
  }
  // Granted before: the subscription is handed in again once per session and tab, so that it
  // follows a new sign-in (it is bound to the session that handed it in).
  if (canNotify && Notification.permission === 'granted') subscribePush();

  function subscribePush() {
    var key = notifyButton && notifyButton.getAttribute('data-push-key');
    var csrf = notifyButton && notifyButton.getAttribute('data-csrf');
    if (!key || !csrf || Notification.permission !== 'granted') return;
    if (!('serviceWorker' in navigator) || !('PushManager' in window)) return;
    var handedIn = 'switchboard.push:' + csrf;
    navigator.serviceWorker
      .register('/sw.js', { scope: '/' })
      .then(function () {
        return navigator.serviceWorker.ready;
      })
      .then(function (registration) {
        return registration.pushManager.getSubscription().then(function (existing) {
          if (existing && window.sessionStorage.getItem(handedIn)) return null;
          return (
            existing ||
            registration.pushManager.subscribe({
              userVisibleOnly: true,
              applicationServerKey: key,
            })
          );
        });
      })
      .then(function (subscription) {
        if (!subscription) return;
        var json = subscription.toJSON();
        return window
          .fetch('/push/subscriptions', {
            method: 'POST',
            credentials: 'same-origin',
            body: new URLSearchParams({
              _csrf: csrf,
              endpoint: json.endpoint,
              p256dh: json.keys.p256dh,
              auth: json.keys.auth,
            }),
          })
          .then(function (response) {
            if (response.ok) window.sessionStorage.setItem(handedIn, '1');
            else console.warn('switchboard: the server refused this browser’s push subscription');
          });
      })
      .catch(function (error) {
        // No push service here (a private window, a browser without one): open pages still
        // notify.
        console.info('switchboard: Web Push is not available here: ' + error.message);
      });
  }
  var sink = document.getElementById('notify');
  if (sink) {
    new MutationObserver(function () {
      var items = sink.querySelectorAll('[data-approval]');
      for (var i = 0; i < items.length; i++) {
        var id = items[i].getAttribute('data-approval');
        if (!canNotify || Notification.permission !== 'granted') continue;
        var note = new Notification('switchboard: approval #' + id + ' waits for you', {
          body: items[i].textContent,
          tag: 'approval-' + id,
        });
        note.onclick = (function (id) {
          return function () {
            window.focus();
            window.location.href = '/approvals/' + id;
          };
        })(id);
      }
    }).observe(sink, { childList: true });
  }

  // A word from the server with an htmx answer: e.g. a verdict that lost the race to another.
  document.addEventListener('switchboard:flash', function (event) {
    var flash = document.getElementById('flash');
    if (flash && event.detail && typeof event.detail.value === 'string') {
      flash.textContent = event.detail.value;
    }
  });

  // Keyboard: j/k move between the page's items, a/d allow or deny the focused approval after a
  // confirmation. Keys typed into a field are the field's.
  document.addEventListener('keydown', function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && target.closest && target.closest('input, textarea, select, [contenteditable]'))
      return;
    var items = Array.prototype.slice.call(document.querySelectorAll('[data-item]'));
    if (items.length === 0) return;
    var current = document.activeElement ? document.activeElement.closest('[data-item]') : null;
    var index = items.indexOf(current);
    if (event.key === 'j' || event.key === 'k') {
      event.preventDefault();
      index = event.key === 'j' ? Math.min(index + 1, items.length - 1) : Math.max(index - 1, 0);
      items[index].focus();
      items[index].scrollIntoView({ block: 'nearest' });
      return;
    }
    if (event.key !== 'a' && event.key !== 'd') return;
    var card = current || (items.length === 1 ? items[0] : null);
    var verdict = event.key === 'a' ? 'allow' : 'deny';
    var button = card ? card.querySelector('button[data-verdict="' + verdict + '"]') : null;
    if (!button) return;
    event.preventDefault();
    var id = card.getAttribute('data-approval');
    if (window.confirm((verdict === 'allow' ? 'Allow' : 'Deny') + ' approval #' + id + '?')) {
      // A click, not requestSubmit: htmx sends the value of the button that was clicked.
      button.click();
    }
  });
})();
