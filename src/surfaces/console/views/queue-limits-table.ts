import type { Queue } from '../../../data/index.js';
import { html, type Html } from '../../../kit/pages/html.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/**
 * The Board's live item `limits`: each limited queue with its limits, what it uses of them now,
 * and whether its todos are held back — until when. Nothing (an empty placeholder) when no queue
 * shown has limits.
 */
export function queueLimitsTable(queues: Queue[]): Html {
  if (queues.length === 0) return html`<div ${liveAttrs('limits')} hidden></div>`;
  // Five columns overflow a phone's width: the table scrolls on its own, reachable by keyboard.
  return html`<div
    ${liveAttrs('limits')}
    class="scrolls"
    tabindex="0"
    role="region"
    aria-label="Queue limits"
  >
    <table class="counts limits">
      <caption>
        Queue limits
      </caption>
      <thead>
        <tr>
          <th scope="col">Queue</th>
          <th scope="col">In flight</th>
          <th scope="col">Claims</th>
          <th scope="col">Waiting</th>
          <th scope="col">Admitting</th>
        </tr>
      </thead>
      <tbody>
        ${queues.map(
          (queue) =>
            html`<tr>
              <th scope="row">${queue.name}</th>
              <td>
                ${
                  queue.max_in_flight === null
                    ? `${queue.in_flight} (no limit)`
                    : `${queue.in_flight} of ${queue.max_in_flight}`
                }
              </td>
              <td>
                ${
                  queue.max_claims === null
                    ? 'no limit'
                    : `${queue.claims_in_window} of ${queue.max_claims} ${queue.claims_window === 'hour' ? 'an hour' : 'a day'}`
                }
              </td>
              <td>${queue.waiting}</td>
              <td>
                ${
                  queue.held_back
                    ? html`<strong>held back</strong> at its limit of
                        ${queue.held_back.reason === 'max_in_flight' ? 'in flight' : 'claims'} —
                        next at ${timeTag(queue.held_back.next_at)}`
                    : 'yes'
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
