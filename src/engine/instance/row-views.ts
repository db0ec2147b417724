/** The error a row records (an errored or diverged instance's), as logs and history records carry it. */
export function errorOf(row: { errorName: string | null; errorMessage: string | null; errorStack: string | null; errorCode: string | null }) {
	return {
		name: row.errorName ?? 'Error',
		message: row.errorMessage ?? '',
		...(row.errorCode ? { code: row.errorCode } : {}),
		...(row.errorStack ? { stack: row.errorStack } : {}),
	};
}
