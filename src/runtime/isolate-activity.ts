/**
 * A count of the work this isolate began serving: every RPC, alarm and HTTP
 * request of a `WorkflowRunner`, and every request of the Worker's app. A
 * pass that yields compares it before and after to learn whether anyone was
 * waiting for the isolate (see engine/steps/yield-pacer.ts). One number per isolate,
 * shared by every object in it: what competes for the isolate is exactly what
 * runs in it.
 */
let begun = 0;

export function workBegan(): void {
	begun++;
}

/** How much work this isolate has begun so far (what a yield compares). */
export function workBegunCount(): number {
	return begun;
}

/** Yields to the event loop; resolves to whether other work began meanwhile. */
export async function yieldToOtherWork(): Promise<boolean> {
	const before = begun;
	await new Promise((resolve) => setTimeout(resolve, 0));
	return begun !== before;
}
