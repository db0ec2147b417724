import type { FC } from 'hono/jsx';
import { ErrorBanner } from './layout';
import { useDashboardBase } from '../mount';

export const LoginPage: FC<{ next: string; error?: string }> = ({ next, error }) => (
	<div class="login card">
		<h1>Sign in</h1>
		<p class="muted">This deployment requires its API token (<code>API_TOKEN</code>). It is checked once; the browser then keeps only a signed session cookie.</p>
		{error ? <ErrorBanner message={error} /> : null}
		<form method="post" action={`${useDashboardBase()}/login`}>
			<input type="hidden" name="next" value={next} />
			<label>
				<span>API token</span>
				<input type="password" name="token" autocomplete="current-password" required autofocus />
			</label>
			<button type="submit" class="primary">Sign in</button>
		</form>
	</div>
);
