// Settings every test process shares; set before any service module reads its configuration.
process.env.MASTER_API_KEY ??= "test-master-key-0123456789abcdef";
process.env.LOG_LEVEL ??= "warn";
