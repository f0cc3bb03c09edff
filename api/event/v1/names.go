package v1

// Topics. Names are lower-case letters, digits and '-' only: RocketMQ
// allows no dots in topic names and the v2.1.2 client rejects other
// characters in group names.
const (
	// TopicOrderEvents carries OrderCreated, OrderCancelled and OrderPaid,
	// sharded by order id (ordered per order).
	TopicOrderEvents = "order-events"
	// TopicOrderCancelTimer carries the delayed OrderCancelTimer messages.
	TopicOrderCancelTimer = "order-cancel-timer"
	// TopicInventoryEvents carries StockReserved, StockRejected and
	// StockReleased, sharded by order id.
	TopicInventoryEvents = "inventory-events"
	// TopicPaymentEvents carries PaymentSucceeded and PaymentRefunded,
	// sharded by order id.
	TopicPaymentEvents = "payment-events"
)

// Producer groups. A transactional producer's group routes the broker's
// check-backs to a live instance of the same service, so each service
// uses its own.
const (
	GroupOrderProducer     = "order-producer"
	GroupInventoryProducer = "inventory-producer"
	GroupPaymentProducer   = "payment-producer"
)

// Consumer groups.
const (
	// GroupOrder: the order service consuming inventory-events and
	// payment-events (ordered per order).
	GroupOrder = "order-service"
	// GroupOrderTimer: the order service consuming order-cancel-timer.
	GroupOrderTimer = "order-timer"
	// GroupInventory: the inventory service consuming order-events
	// (ordered per order).
	GroupInventory = "inventory-service"
	// GroupPayment: the payment service consuming order-events (refunds
	// for cancelled orders).
	GroupPayment = "payment-service"
)

// Tags: every event is sent with its type name as the message tag, so
// consumers subscribe by tag ("OrderCreated || OrderCancelled") and
// Decode knows the payload type.
const (
	TagOrderCreated     = "OrderCreated"
	TagOrderCancelled   = "OrderCancelled"
	TagOrderPaid        = "OrderPaid"
	TagOrderCancelTimer = "OrderCancelTimer"
	TagStockReserved    = "StockReserved"
	TagStockRejected    = "StockRejected"
	TagStockReleased    = "StockReleased"
	TagPaymentSucceeded = "PaymentSucceeded"
	TagPaymentRefunded  = "PaymentRefunded"
)
