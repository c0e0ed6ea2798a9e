// Formats of stored data that never change (a change is a new version beside the old): live features
// and the frozen migration history both use them. They import only the platform and libraries.
export { auditEntryHash, auditEntryText, chainEntryOf, writtenEntryHash, type AuditChainEntry, type StoredAuditEntry } from './audit-chain.ts';
export {
  erasedReasonText,
  erasureMarkerText,
  erasureOfMarker,
  erasureOfMarkerText,
  gateErasureLeafBody,
  parseGateErasureLeaf,
  type ErasureCover,
  type ErasureCovers,
} from './erasure.ts';
export { STATUSES, type RequestStatus } from './request-status.ts';
export {
  argsDigest,
  RECEIPT_TTL_MS,
  receiptNonce,
  receiptRedemptionSchema,
  receiptSchema,
  receiptSignatureValid,
  signReceipt,
  type Receipt,
} from './receipt.ts';
