"""What the API takes: request bodies checked and parsed once (``bodies``), a schedule's body
loaded into the domain (``schedule``), a PATCH merged onto the stored body (``patch``), and the
query and header parameters (``queries``). Nothing past this package sees a request's JSON."""
