"""ActiveMQ's networks of brokers and the tree connector (AMQ-2875): links to peer routers that forward on demand."""
