// Swagger UI on the entrypoint's merged document, which the gateway serves beside it.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // Swagger UI would otherwise send the document to an online validator for its badge.
    validatorUrl: null,
  });
});
