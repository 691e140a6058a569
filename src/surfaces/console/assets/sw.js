/* global self, URL */
// The web console's service worker (served at /sw.js, scope /): it shows the pushes that tell a
// human of an approval while no console page is in front of them, and replaces them when the
// approval ends. It has no fetch handler: pages load exactly as without it. A push carries only
// an approval's id and title (and, when it ended, how); never its input.
'use strict';

var TITLE = 'switchboard: approval #';

function focusedConsole() {
  return self.clients
    .matchAll({ type: 'window', includeUncontrolled: true })
    .then(function (windows) {
      return windows.some(function (w) {
        return w.focused;
      });
    });
}

function show(message) {
  var tag = 'approval-' + message.id;
  var data = { id: message.id, url: '/approvals/' + message.id };
  return Promise.all([focusedConsole(), self.registration.getNotifications({ tag: tag })]).then(
    function (found) {
      var focused = found[0];
      var shown = found[1];
      if (message.type === 'approval') {
        // A console page in front of the human shows its own notification (same tag).
        if (focused) return;
        return self.registration.showNotification(TITLE + message.id + ' waits for you', {
          body: message.title,
          tag: tag,
          data: data,
          requireInteraction: true,
        });
      }
      // The approval ended: what it said is replaced by how it ended, quietly; if it is no
      // longer shown (dismissed, or clicked), nothing new appears. The replacement takes its
      // place by its tag: closing it first would race the new one, which has the same
      // notification id, and the platform may close the new one (seen under load).
      if (shown.length === 0) return;
      if (focused) {
        shown.forEach(function (notification) {
          notification.close();
        });
        return;
      }
      return self.registration.showNotification(TITLE + message.id + ' ' + message.outcome, {
        body: message.title,
        tag: tag,
        data: data,
        silent: true,
      });
    },
  );
}

self.addEventListener('install', function () {
  self.skipWaiting();
});

self.addEventListener('activate', function (event) {
  event.waitUntil(self.clients.claim());
});

self.addEventListener('push', function (event) {
  var message;
  try {
    message = event.data ? event.data.json() : null;
  } catch {
    return; // not a push of ours
  }
  if (!message || typeof message.id !== 'number' || typeof message.title !== 'string') return;
  if (message.type !== 'approval' && message.type !== 'closed') return;
  event.waitUntil(show(message));
});

// A click opens the approval's page: the window already showing it, else a new one.
self.addEventListener('notificationclick', function (event) {
  var data = event.notification.data || {};
  event.notification.close();
  if (typeof data.url !== 'string') return;
  var url = new URL(data.url, self.location.origin).href;
  event.waitUntil(
    self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (windows) {
      for (var i = 0; i < windows.length; i++) {
        if (windows[i].url === url) return windows[i].focus();
      }
      return self.clients.openWindow(url);
    }),
  );
});
