// The confirmation every change asks for: the page's <dialog id="confirm">.

/**
 * Asks first; resolves true on Confirm. For a destructive action Cancel has the focus, so a
 * stray Enter changes nothing. `extra` (optional) is put in the dialog above the buttons
 * (a choice that goes with the action, e.g. "archive first") and taken out after.
 * @param {string} text
 * @param {boolean} destructive
 * @param {HTMLElement | null} [extra]
 * @returns {Promise<boolean>}
 */
export function confirmAction(text, destructive, extra = null) {
	const dialog = /** @type {HTMLDialogElement} */ (document.getElementById('confirm'));
	const slot = /** @type {HTMLElement | null} */ (dialog.querySelector('#confirm-extra'));
	return new Promise((resolve) => {
		/** @type {HTMLElement} */ (dialog.querySelector('#confirm-text')).textContent = text;
		if (slot) slot.replaceChildren(...(extra ? [extra] : []));
		dialog.returnValue = '';
		dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
		dialog.showModal();
		/** @type {HTMLElement} */ (dialog.querySelector(destructive ? '#confirm-cancel' : '#confirm-ok')).focus();
	});
}
