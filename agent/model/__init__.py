"""Model providers: the OpenAI-compatible client (httpx) and the shapes around it."""
