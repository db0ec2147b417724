import type { Child, FC } from 'hono/jsx';
import type { TypeSchemas } from '../../engine/definition/type-schemas';

/** A type's declared events with their shapes (`GET /types/:type`), as an event editor shows them. */
export type EventShapes = TypeSchemas['events'];

/**
 * An event, its payload and an idempotency key, beside the event's expected shape: the
 * instance page's "Send an event" and the list's bulk event. Ids are `<prefix>-name`,
 * `-payload`, `-note` and `-schema` (wired by `wireEventEditor` in common.js); `children` go
 * under the fields (a send button, its result).
 */
export const EventEditor: FC<{ prefix: string; events: EventShapes; keyHint?: string; children?: Child }> = ({ prefix, events, keyHint, children }) => (
	<>
		<div class="event-fields">
			<label>
				<span>Event</span>
				<select name="event" id={`${prefix}-name`}>
					{events.map((e) => (
						<option value={e.name}>{e.name}</option>
					))}
				</select>
			</label>
			<label>
				<span>Idempotency key (optional)</span>
				<input name="idempotencyKey" autocomplete="off" spellcheck={false} placeholder={keyHint} />
			</label>
			<label class="grow">
				<span>Payload (JSON)</span>
				<textarea name="payload" id={`${prefix}-payload`} rows={6} spellcheck={false} class="mono"></textarea>
			</label>
			{children}
		</div>
		<div class="event-shape">
			<span class="label">Expected shape</span>
			<p id={`${prefix}-note`} class="muted"></p>
			<pre id={`${prefix}-schema`} class="mono"></pre>
		</div>
	</>
);
