from django.urls import path

from accounts import api

urlpatterns = [
    path("me/", api.MeApi.as_view(), name="me"),
    path("tokens/", api.TokenCollectionApi.as_view(), name="tokens"),
    path("tokens/<uuid:token_id>/revoke/", api.TokenRevokeApi.as_view(), name="token-revoke"),
]
