"""URLconf for the 500-envelope test: the real API plus one endpoint that fails unexpectedly."""

from django.urls import path
from rest_framework.request import Request
from rest_framework.views import APIView

from memoryhub import urls as real


class BoomApi(APIView):
    def get(self, request: Request) -> None:
        raise RuntimeError("unexpected failure")


urlpatterns = [path("api/v1/boom/", BoomApi.as_view()), *real.urlpatterns]
