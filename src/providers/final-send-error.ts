/** A provider's answer to a write-back that retrying cannot change (the issue is gone, the token refused…). */
export class FinalSendError extends Error {}
