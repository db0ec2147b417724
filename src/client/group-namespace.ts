import { placeOf, type Jurisdiction } from '../engine/support/group-id';

/**
 * Routing by group (docs/residency.md): a name whose group part names a jurisdiction is reached
 * through `WORKFLOW_RUNNER.jurisdiction(j)`, every other name through the namespace itself. The
 * name alone decides: no lookup, no registry. A name keeps its group part in the jurisdiction's
 * namespace too, so two groups sharing a jurisdiction (or none) never share an object.
 */

/** The namespace as shardflow reaches it by name, with the creation options Cloudflare takes. */
export interface RoutedNamespace {
	getByName(name: string, options?: { locationHint?: string }): unknown;
}

/** What this file needs of a namespace: structural, like `WorkflowRunnerNamespace`. */
interface NamespaceLike {
	idFromName(name: string): unknown;
	get(id: any, options?: any): unknown;
	getByName?(name: string, options?: any): unknown;
	jurisdiction?(jurisdiction: string): NamespaceLike;
}

/** The namespaces where workerd refused a jurisdiction and the emulation took over (locally only, see `inJurisdiction`). */
const emulated = new WeakSet<object>();
/** Each namespace's jurisdiction namespaces, made once. */
const restricted = new WeakMap<object, Map<string, NamespaceLike>>();

function jurisdictionOf(ns: NamespaceLike, jurisdiction: Jurisdiction): NamespaceLike {
	let byJurisdiction = restricted.get(ns);
	if (!byJurisdiction) restricted.set(ns, (byJurisdiction = new Map()));
	let sub = byJurisdiction.get(jurisdiction);
	if (!sub) byJurisdiction.set(jurisdiction, (sub = ns.jurisdiction!(jurisdiction)));
	return sub;
}
let emulationLogged = false;

/** Reaches names by group over one namespace. `development`: `SHARDFLOW_ENV=development` (wrangler dev, the test pool). */
export function groupRouted(ns: NamespaceLike, development: boolean): RoutedNamespace {
	return {
		getByName(name, options) {
			const place = placeOf(name);
			if (place.jurisdiction === null) return byName(ns, name, options);
			return inJurisdiction(ns, place.jurisdiction, name, options, development);
		},
	};
}

function byName(ns: NamespaceLike, name: string, options?: { locationHint?: string }): unknown {
	const hinted = options?.locationHint === undefined ? undefined : options;
	if (typeof ns.getByName === 'function') return hinted ? ns.getByName(name, hinted) : ns.getByName(name);
	return hinted ? ns.get(ns.idFromName(name), hinted) : ns.get(ns.idFromName(name));
}

/**
 * The object through the jurisdiction's namespace. workerd (wrangler dev, the vitest pool)
 * throws "Jurisdiction restrictions are not implemented in workerd" for any id of a
 * jurisdiction's namespace; there, and only under `SHARDFLOW_ENV=development`, the name is
 * reached through the namespace itself: its group part already makes it an object of its own,
 * so every group still has its own id space locally. Deployed, that error never happens, and
 * any other is thrown: an EU name never silently lands outside the EU. A stand-in namespace
 * without `jurisdiction()` (the Node test kit's) is used as it is.
 */
function inJurisdiction(ns: NamespaceLike, jurisdiction: Jurisdiction, name: string, options: { locationHint?: string } | undefined, development: boolean): unknown {
	if (typeof ns.jurisdiction !== 'function' || emulated.has(ns)) return byName(ns, name, options);
	try {
		return byName(jurisdictionOf(ns, jurisdiction), name, options);
	} catch (error) {
		if (!development || !/not implemented in workerd/i.test(String((error as Error)?.message))) throw error;
		emulated.add(ns);
		if (!emulationLogged) {
			emulationLogged = true;
			console.warn({ source: 'shardflow', level: 'warn', msg: 'groups.jurisdiction_emulated: workerd does not implement jurisdictions; locally each group keeps its own objects in the one namespace (docs/residency.md)', event: 'groups.jurisdiction_emulated' });
		}
		return byName(ns, name, options);
	}
}
