"""gRPC handlers: one module per service, sharing one request pipeline."""
