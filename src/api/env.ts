import type { ShardflowEnv } from '../client/instance-client';
import type { RateLimitBinding } from './failed-credentials';

/** Bindings and variables the API reads. */
export type ApiEnv = ShardflowEnv & {
	/** When set, every route requires `Authorization: Bearer <API_TOKEN>`. */
	API_TOKEN?: string;
	/** Optional second token that may only read (GET and HEAD), for monitoring; it works only beside API_TOKEN. */
	API_TOKEN_READONLY?: string;
	/** "true" serves every route without a token outside development (an explicit, documented choice). */
	ALLOW_UNAUTHENTICATED?: string;
	/** "development" under `npm run dev`; anything else counts as production. */
	SHARDFLOW_ENV?: string;
	/** Optional Workers Rate Limiting binding that counts wrong credentials per client address across isolates (docs/rest-api.md "Security"). */
	AUTH_FAILURES?: RateLimitBinding;
};
