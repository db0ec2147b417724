import type { FC } from 'hono/jsx';

/** The confirmation every change asks for (confirm.js). */
export const ConfirmDialog: FC = () => (
	<dialog id="confirm" aria-labelledby="confirm-title">
		<form method="dialog">
			<h2 id="confirm-title">Are you sure?</h2>
			<p id="confirm-text"></p>
			<div id="confirm-extra"></div>
			<div class="actions">
				<button value="cancel" type="submit" id="confirm-cancel">Cancel</button>
				<button value="ok" type="submit" class="primary" id="confirm-ok">Confirm</button>
			</div>
		</form>
	</dialog>
);
